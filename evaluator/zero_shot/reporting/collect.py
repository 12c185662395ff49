"""`recorder collect`: the table again, from the results under each PATH that verify (recorder.results.binding):
the newest of each checkpoint, smoke tests (`--limit`) left out, as a team's collect.py prints it; or all of
them, marked, with `everything`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.origin.targets import RESULTS, target
from evaluator.zero_shot.reporting.outputs import table, verified_results
from evaluator.zero_shot.reporting.shown import newest_per_checkpoint, smoke_test
from evaluator.zero_shot.scored_bytes import REHASH_BYTES, Rehash
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
    notes: list[str] = field(default_factory=list)  # what was not rechecked: shards compared by size, gone


def collect(
    paths: list[Path], width: int | None = None, trusted: Mapping[str, str] | None = None, everything: bool = False
) -> Collected:
    """The table of the zero-shot results under every PATH that verify against their binding (signed by a
    `trusted` key, when given), in blocks that fit `width` when given: the newest of each checkpoint that is
    not a smoke test, or with `everything` each one (smoke tests marked). Without `trusted` keys no author is
    checked: every row says so (unsigned, key not checked). ZeroShotInputError when a PATH holds no
    results.json at all."""
    docs: list[ZeroShotDocument] = []
    skipped: list[str] = []
    rehash = Rehash()  # one budget of checkpoint bytes rehashed for the whole command
    for path in paths:
        if not path.exists():
            raise ZeroShotInputError(f"{path}: no such directory")
        if not path.is_dir():
            raise ZeroShotInputError(f"{path}: not a directory (give a checkpoint or a zero-shot -o DIR)")
        found = verified_results(result_base(path.resolve()), trusted, rehash)
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
    shown = {d.label for d in docs}
    gone = [label for label in dict.fromkeys(rehash.gone) if label in shown]
    notes = [f"note: {label}: its checkpoint is gone, its shards not rechecked" for label in gone]
    by_size = [label for label in dict.fromkeys(rehash.by_size) if label in shown]
    if by_size:
        notes.append(
            f"note: {', '.join(by_size)}: checkpoint shards compared by size only, not rehashed "
            f"(collect rehashes at most {REHASH_BYTES // 1024**3} GiB a command)"
        )
    return Collected(table(docs, width, unchecked=trusted is None) if docs else "", skipped, left_out, notes)
