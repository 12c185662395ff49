"""The FSDP2/DCP layout has one owner, recorder/checkpoints/torch_dcp/fsdp2_layout.py: no other product module spells one of its meta
file names, a pattern of its epoch (`fsdp2_epoch_N`) or step (`step_N`) folders, or the step folder name
(`step_NNNNNNN`) the recorder writes. A reader that needs one imports it (`META_FILES`, `EPOCH`, `STEP`,
`step_of`, `step_dir`), so a second reader that disagrees with the first cannot be written by accident."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from recorder.checkpoints.torch_dcp import fsdp2_layout as team_layout
from tests.layout.test_imports import MODULES

OWNER = "recorder.checkpoints.torch_dcp.fsdp2_layout"
META_NAMES = frozenset({*team_layout.META_FILES, team_layout.OLD_SNAPSHOT_META})
# The same words meaning something else, module by module.
NOT_THE_LAYOUT = {("trainer.warmup", "meta.json")}  # the warmup checkpoint's own meta, beside its safetensors
# A regular expression over a folder name of the layout: the name, then a group, a digit class or a repeat.
_PATTERN = re.compile(r"(?:fsdp2_epoch|step)(?:\|\w+\))?_(?:0\*|\(|\\d|\[)")
# The step folder name as a format: `step_{:07d}`, `step_{step:07d}`, `step_%07d`.
_STEP_FORMAT = re.compile(r"step_(?:\{[^}]*:07d\}|%07d)")


def _spelled(node: ast.JoinedStr) -> str:
    """An f-string as its source spells it, its values written `{:spec}` (the spec kept: `{:07d}`)."""
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
        elif isinstance(part, ast.FormattedValue):
            spec = part.format_spec
            out.append("{:" + _spelled(spec) + "}" if isinstance(spec, ast.JoinedStr) else "{}")
    return "".join(out)


def layout_spellings(modules: dict[str, Path]) -> list[str]:
    """`module:line: text` for each meta file name, folder pattern or step folder format outside the owner."""
    found: list[tuple[str, int, int, str]] = []
    for module, path in sorted(modules.items()):
        if module == OWNER:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        in_fstrings = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in ast.walk(n)}
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = _spelled(node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in in_fstrings:
                text = node.value
            else:
                continue
            named = text in META_NAMES and (module, text) not in NOT_THE_LAYOUT
            if named or _PATTERN.search(text) or _STEP_FORMAT.search(text):
                found.append((module, node.lineno, node.col_offset, text))
    return [f"{module}:{line}: {text!r}" for module, line, _, text in sorted(found)]


def test_only_the_layout_module_spells_the_fsdp2_layout() -> None:
    assert layout_spellings(MODULES) == []


def test_the_owner_spells_what_the_others_may_not() -> None:
    owner = {OWNER: MODULES[OWNER]}
    assert layout_spellings({"recorder.other": MODULES[OWNER]}) != []
    assert layout_spellings(owner) == []
    assert team_layout.step_dir(19) == "step_0000019" and team_layout.step_of("step_0000019") == 19


def test_a_meta_name_a_pattern_and_the_step_format_are_found(tmp_path: Path) -> None:
    held = tmp_path / "detect.py"
    held.write_text(
        "import re\n"
        "META = ('final_meta.json', 'meta.json')\n"
        "EPOCH = re.compile(r'fsdp2_epoch_(\\d+)')\n"
        "STEP = re.compile(r'(?:step|iter)_0*(\\d+)')\n"
        "def where(step, run):\n"
        "    return run / f'step_{step:07d}', 'step_%07d' % step\n"
        "DOC = 'an archive: fsdp2_epoch_N/ and its final_meta.json'\n"  # prose naming them is no reader
    )
    assert layout_spellings({"recorder.checkpoints.readers.detect": held}) == [
        "recorder.checkpoints.readers.detect:2: 'final_meta.json'",
        "recorder.checkpoints.readers.detect:2: 'meta.json'",
        "recorder.checkpoints.readers.detect:3: 'fsdp2_epoch_(\\\\d+)'",
        "recorder.checkpoints.readers.detect:4: '(?:step|iter)_0*(\\\\d+)'",
        "recorder.checkpoints.readers.detect:6: 'step_{:07d}'",
        "recorder.checkpoints.readers.detect:6: 'step_%07d'",
    ]
    assert "trainer.warmup:2: 'meta.json'" not in layout_spellings({"trainer.warmup": held})  # its own meta
