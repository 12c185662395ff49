"""The checkpoints a run committed, read from its `checkpoint_committed` events (never by globbing).

A file on disk that no event names was never committed (a crashed save, a stray copy): it is not a
candidate. The rule (6.1): from the validation start step CEIL(2.5 + 3840 / GBS) on, a checkpoint after
every step until training stops; `check_series` reports any departure from that.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evaluator.errors import SeriesError, UnsafePathError
from recorder.checkpoints.formats import CheckpointFormat, recorded_format
from recorder.rules import series_problems, validation_start_step
from recorder.store.events import Event
from recorder.store.kinds import CheckpointCommitted


@dataclass(frozen=True, slots=True, kw_only=True)
class CommittedCheckpoint:
    """One committed checkpoint, as its event describes it."""

    step: int
    samples_count: int | None
    path: str  # relative to the run directory, as recorded
    sha256: str
    bytes: int | None
    weight_update_ns: int | None
    fingerprint: dict[str, Any] = field(default_factory=dict)
    dtype: str | None = None
    format: CheckpointFormat | None = None  # a row of recorder.checkpoints.formats; None: the trainer's own file
    manifest: dict[str, Any] | None = None  # every shard's digest (recorder.checkpoints.manifest)
    segment: str = ""
    seq: int = -1

    @classmethod
    def from_event(cls, e: Event) -> CommittedCheckpoint:
        if e.step is None:
            raise SeriesError(
                f"{e.segment} seq {e.seq}: checkpoint_committed without a step: the trainer's log "
                "is malformed; it cannot be evaluated"
            )
        d = CheckpointCommitted.from_event(e)
        return cls(
            step=e.step,
            samples_count=e.samples_count,
            path=d.path,
            sha256=d.sha256,
            bytes=d.bytes,
            weight_update_ns=d.weight_update_ns,
            fingerprint=dict(d.fingerprint),
            dtype=d.dtype,
            format=d.format,
            manifest=dict(d.manifest) if d.manifest is not None else None,
            segment=e.segment,
            seq=e.seq,
        )

    @property
    def where(self) -> str:
        """Where the commit was recorded, for messages."""
        return f"step {self.step} ({self.segment} seq {self.seq})"


def committed(events: Iterable[Event]) -> list[CommittedCheckpoint]:
    """One checkpoint per step, ascending. A step committed twice with different weights is an error."""
    by_step: dict[int, CommittedCheckpoint] = {}
    for e in events:
        if e.kind != "checkpoint_committed":
            continue
        cp = CommittedCheckpoint.from_event(e)
        seen = by_step.get(cp.step)
        if seen is not None and (seen.sha256, seen.path) != (cp.sha256, cp.path):
            raise SeriesError(
                f"step {cp.step} was committed twice with different weights ({seen.segment} seq {seen.seq} and "
                f"{cp.segment} seq {cp.seq}): which one training meant is unknowable; evaluate with --order "
                "naming other steps, or fix the run"
            )
        by_step.setdefault(cp.step, cp)
    return [by_step[s] for s in sorted(by_step)]


def check_series(
    cps: list[CommittedCheckpoint], global_batch_size: int, final_step: int | None, *, allow_gaps: bool
) -> tuple[list[CommittedCheckpoint], list[str]]:
    """(the candidates: checkpoints at or after the validation start, the problems found).

    Raises SeriesError when there are problems and not `allow_gaps`.
    """
    start = validation_start_step(global_batch_size)
    problems = series_problems([c.step for c in cps], start, final_step)
    if problems and not allow_gaps:
        raise SeriesError(
            "the committed checkpoints do not follow the 6.1 rule (GBS "
            f"{global_batch_size}, validation start {start}): "
            + "; ".join(problems)
            + ". Pass --allow-gaps to evaluate what there is anyway."
        )
    return [c for c in cps if c.step >= start], problems


def resolve(run_path: Path, cp: CommittedCheckpoint) -> Path:
    """The checkpoint directory inside the run directory; UnsafePathError if it would leave it.

    Symlinks are resolved first, so a link inside the run pointing elsewhere is refused too. An imported
    series (NeMo-RL's `nemo-rl-*`, an FSDP2 job's `dcp-archive` / `dcp-snapshot`) stays where it was trained:
    `import-checkpoints` recorded its path relative to the run, and it may lead outside; its weights'
    manifest hash still has to match.
    """
    rel = PurePosixPath(cp.path)
    if not cp.path or rel.is_absolute() or Path(cp.path).is_absolute():
        raise UnsafePathError(
            f"{cp.where}: checkpoint path {cp.path!r} is not relative to the run directory: "
            "refused (a recorded path must stay inside the run)"
        )
    root = run_path.resolve()
    target = (root / Path(*rel.parts)).resolve()
    imported = recorded_format(cp.format).imported
    if target != root and root not in target.parents and not imported:
        raise UnsafePathError(
            f"{cp.where}: checkpoint path {cp.path!r} resolves to {target}, outside the run directory {root}: refused"
        )
    return target
