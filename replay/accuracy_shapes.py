"""What an `eval_accuracy` value is, for one benchmark under one ruleset, as the compliance checker's own
rule file reads it.

Most benchmarks log one number. maskrcnn logs `{"BBOX": 0.377, "SEGM": 0.339}`: its rule file tests
`'BBOX' in v['value']` and compares `v['value']['BBOX']`. Nothing here lists benchmarks: the names a
benchmark's `eval_accuracy` rules index `v['value']` with are read from the installed mlperf-logging's
`<division>_<benchmark>.yaml`, so a value is held to the shape the checker compares, with the types it
compares correctly (numbers, never `true`).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml

# `v['value']['BBOX']` and `'BBOX' in v['value']`, in either quote
_INDEXED = re.compile(r"""v\[\s*['"]value['"]\s*\]\s*\[\s*['"](\w+)['"]\s*\]""")
_MEMBER = re.compile(r"""['"](\w+)['"]\s+in\s+v\[\s*['"]value['"]\s*\]""")

# The fields of a dict-valued accuracy the checker compares; () when the accuracy is one number.
Fields = tuple[str, ...]


def _rule_texts(path: Path) -> list[str]:
    """The CHECK and ATLEAST_ONE_CHECK expressions of a rule file's `eval_accuracy` records."""
    records = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.BaseLoader) or []
    texts: list[str] = []
    for record in records:
        key = record.get("KEY") if isinstance(record, dict) else None
        if not isinstance(key, dict) or key.get("NAME") != "eval_accuracy":
            continue
        for field in ("CHECK", "ATLEAST_ONE_CHECK"):
            value = key.get(field)
            texts.extend(value if isinstance(value, list) else [value] if isinstance(value, str) else [])
    return texts


def _fields_in(path: Path) -> Fields:
    names: dict[str, None] = {}
    for text in _rule_texts(path):
        for pattern in (_MEMBER, _INDEXED):
            names.update(dict.fromkeys(pattern.findall(text)))
    return tuple(names)


def _rule_file(folder: Path, division: str, benchmark: str) -> Path | None:
    for name in (f"{division}_{benchmark}.yaml", f"closed_{benchmark}.yaml", f"{benchmark}.yaml"):
        if (folder / name).is_file():
            return folder / name
    return None


@cache
def fields_in_rule_files(folders: tuple[Path, ...], division: str | None, benchmark: str | None) -> Fields:
    """The fields `eval_accuracy` holds for `benchmark` in the first of a ruleset's checker `folders` with a
    rule file for it (its division's, else the closed one): the ruleset's own folder first, then the others
    its `KnownRuleset.rule_folders` names (a ruleset without that benchmark, whose checker refuses the log
    anyway, reads the shape the log was written with)."""
    if not benchmark or not re.fullmatch(r"\w+", benchmark):
        return ()
    division = division if division in ("closed", "open") else "closed"
    for folder in folders:
        found = _rule_file(folder, division, benchmark)
        if found is not None:
            return _fields_in(found)
    return ()
