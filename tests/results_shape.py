"""The shape each kind of results.json is written in, held in tests/golden/results_keys.json: its top-level
keys and those of its typed parts, in order. A written file must have that shape, be the bytes `json.dumps`
gives of its own parse (indent 1, keys in place, UTF-8 as is, final newline), and read back through its
class into the same bytes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recorder.results.document import Document
from recorder.results.evaluation import CommandResults, PassAtKResults
from recorder.results.harness import HarnessResults
from recorder.results.zero_shot import ZeroShotResults, ZeroShotStepResults

GOLDEN = Path(__file__).parent / "golden" / "results_keys.json"
PARSE: dict[str, Callable[[bytes], Document]] = {
    "pass_at_k": PassAtKResults.from_json,
    "command": CommandResults.from_json,
    "harness": HarnessResults.from_json,
    "zero_shot": ZeroShotResults.from_json,
    "zero_shot_step": ZeroShotStepResults.from_json,
}


def keys_at(doc: Any, path: str) -> list[str]:
    """The keys of the object at a dotted `path` of `doc` ("samples.0": the first sample, "tasks.*": the
    first task's object, "": the document)."""
    for part in filter(None, path.split(".")):
        if part == "*":
            doc = next(iter(doc.values()))
        elif isinstance(doc, list):
            doc = doc[int(part)]
        else:
            doc = doc[part]
    return list(doc)


def assert_written_in_shape(path: Path, kind: str) -> None:
    body = path.read_bytes()
    doc = json.loads(body)
    golden: dict[str, list[str]] = json.loads(GOLDEN.read_text())[kind]
    assert {p: keys_at(doc, p) for p in golden} == golden
    assert body == (json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False, allow_nan=False) + "\n").encode()
    assert PARSE[kind](body).to_json() == body
