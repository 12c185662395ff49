"""`recorder collect`: the table again, from every result under each PATH that verifies (recorder.results.binding)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.outputs import table, verified_results
from evaluator.zero_shot.targets import RESULTS, target
from recorder.results.zero_shot import ZeroShotDocument


def result_base(path: Path) -> Path:
    """Where PATH's results are: a checkpoint's (or snapshot's) eval_results, or PATH itself (an -o DIR)."""
    if (path / RESULTS).is_dir() or (path / ".metadata").is_file() or path.parent.name == "snapshots":
        return target(path).results_base()
    return path


@dataclass(frozen=True)
class Collected:
    """The table of the results shown, and one line per results.json passed over, saying why."""

    table: str
    skipped: list[str]


def collect(paths: list[Path], width: int | None = None, trusted: Mapping[str, str] | None = None) -> Collected:
    """The table of every zero-shot result under every PATH that verifies against its binding (signed by a
    `trusted` key, when given), in blocks that fit `width` when given; two results of one checkpoint are two
    rows. ZeroShotInputError when a PATH holds no results.json at all."""
    docs: list[ZeroShotDocument] = []
    skipped: list[str] = []
    for path in paths:
        if not path.exists():
            raise ZeroShotInputError(f"{path}: no such directory")
        if not path.is_dir():
            raise ZeroShotInputError(f"{path}: not a directory (give a checkpoint or a zero-shot -o DIR)")
        found = verified_results(result_base(path.resolve()), trusted)
        if not found.shown and not found.skipped:
            raise ZeroShotInputError(f"{path}: no zero-shot results.json under it: run recorder zero-shot {path}")
        docs.extend(doc for _, doc in found.shown)
        skipped.extend(found.skipped)
    return Collected(table(docs, width) if docs else "", skipped)
