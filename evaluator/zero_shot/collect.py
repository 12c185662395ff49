"""`recorder collect`: the table again, from the newest results of each PATH."""

from __future__ import annotations

from pathlib import Path

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.outputs import newest_results, table
from evaluator.zero_shot.targets import RESULTS, target
from recorder.results.zero_shot import ZeroShotDocument


def result_base(path: Path) -> Path:
    """Where PATH's results are: a checkpoint's (or snapshot's) eval_results, or PATH itself (an -o DIR)."""
    if (path / RESULTS).is_dir() or (path / ".metadata").is_file() or path.parent.name == "snapshots":
        return target(path).results_base()
    return path


def collect(paths: list[Path], width: int | None = None) -> str:
    """The table of the newest result per checkpoint under every PATH (in blocks that fit `width`, when
    given); ZeroShotInputError when there is none."""
    docs: list[ZeroShotDocument] = []
    for path in paths:
        if not path.exists():
            raise ZeroShotInputError(f"{path}: no such directory")
        if not path.is_dir():
            raise ZeroShotInputError(f"{path}: not a directory (give a checkpoint or a zero-shot -o DIR)")
        found = newest_results(result_base(path.resolve()))
        if not found:
            raise ZeroShotInputError(f"{path}: no zero-shot results.json under it: run recorder zero-shot {path}")
        docs.extend(found)
    return table(docs, width)
