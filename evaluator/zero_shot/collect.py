"""`recorder collect`: the table again, from the results under each PATH that verify (recorder.results.binding):
the newest of each checkpoint, smoke tests (`--limit`) left out, as a team's collect.py prints it; or all of
them, marked, with `everything`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.outputs import table, verified_results
from evaluator.zero_shot.shown import newest_per_checkpoint, smoke_test
from evaluator.zero_shot.targets import RESULTS, target
from recorder.results.zero_shot import ZeroShotDocument


def result_base(path: Path) -> Path:
    """Where PATH's results are: a checkpoint's (or snapshot's) eval_results, or PATH itself (an -o DIR)."""
    if (path / RESULTS).is_dir() or (path / ".metadata").is_file() or path.parent.name == "snapshots":
        return target(path).results_base()
    return path


@dataclass(frozen=True)
class Collected:
    """The table of the results shown, one line per results.json passed over saying why, and what the
    default view left out (older results, smoke tests), as a line, or ""."""

    table: str
    skipped: list[str]
    left_out: str = ""


def collect(
    paths: list[Path], width: int | None = None, trusted: Mapping[str, str] | None = None, everything: bool = False
) -> Collected:
    """The table of the zero-shot results under every PATH that verify against their binding (signed by a
    `trusted` key, when given), in blocks that fit `width` when given: the newest of each checkpoint that is
    not a smoke test, or with `everything` each one (smoke tests marked). ZeroShotInputError when a PATH
    holds no results.json at all."""
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
    left_out = ""
    if not everything:
        scored = [d for d in docs if smoke_test(d) is None]
        newest = newest_per_checkpoint(scored)
        smoke, older = len(docs) - len(scored), len(scored) - len(newest)
        parts = [f"{older} older result(s) of the same checkpoints"] if older else []
        parts += [f"{smoke} smoke test(s) (--limit)"] if smoke else []
        left_out = f"left out {' and '.join(parts)}: --all shows them" if parts else ""
        docs = newest
    return Collected(table(docs, width) if docs else "", skipped, left_out)
