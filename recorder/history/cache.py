"""The compacted Parquet file checked against the segments it caches: stale is fine, different is not.

Kept out of `recorder.verify`, which judges the log alone; `verify_with_cache` is what `recorder verify` and
`recorder report` (which read the history) run. Replay and the evaluator read the segments, never the cache,
so they call `verify_run` itself. The history (`recorder query`, `runs`, `report`) reads a run's cache only
after `CacheChecks` has compared it with the segments, while the events compared stay within
CHECK_EVENTS per command; past that, the runs served from unchecked caches are named in one note.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from recorder.history import compact
from recorder.store.run import RunDir
from recorder.verify import Problem, VerifyReport, verify_run


def check_cache(report: VerifyReport) -> None:
    """Add the cache's problems (or its staleness, as a warning) to an intact run's report."""
    run = report.run
    cache = compact.parquet_path(run)
    if not cache.exists():
        return
    if compact.fresh_manifest(run) is None:
        report.warnings.append(
            f"{cache.relative_to(run.path)}: stale (the segments changed since compaction); "
            "the history reads the segments; `recorder compact` refreshes it"
        )
        return
    for message in compact.check_compacted(run):
        report.problems.append(Problem(str(cache.relative_to(run.path)), None, message.split(": ", 1)[-1]))


def verify_with_cache(
    path: Path | str | RunDir,
    *,
    keep_events: bool = False,
    trusted: Mapping[str, str] | None | Literal["environment"] = "environment",
    untrusted_ok: bool | None = None,
    progress: Callable[[int], None] | None = None,
) -> VerifyReport:
    """`verify_run` (under `trusted`: by default the keys RECORDER_TRUST names), then the compacted cache
    when the segments themselves are intact."""
    report = verify_run(path, keep_events=keep_events, trusted=trusted, untrusted_ok=untrusted_ok, progress=progress)
    if not report.problems:
        check_cache(report)
    if report.problems:
        report.events = None  # kept for intact runs only
    return report


# Comparing a cache costs reading the run's segments, which the cache exists to spare: about 4.5 s of CPU a
# command at most, as the scores recheck (replay.scorekeeping.scores_check.RECHECK_EVENTS).
CHECK_EVENTS = 100_000


@dataclass
class CacheChecks:
    """The caches one command compares with their segments before reading them, within CHECK_EVENTS."""

    left: int = CHECK_EVENTS
    unchecked: list[str] = field(default_factory=list)  # run ids read from a cache past the budget

    def problem(self, run: RunDir, run_id: str, events: int) -> str | None:
        """Why the run's compacted file must not be read (it differs from the segments), or None: it equals
        them, or the budget is spent (the run is then noted as read unchecked)."""
        if events > self.left:
            self.unchecked.append(run_id)
            return None
        self.left -= events
        found = compact.check_compacted(run)
        return found[0] if found else None

    def note(self) -> str | None:
        """One line naming the runs read from caches no check compared with their segments, or None."""
        if not self.unchecked:
            return None
        shown = ", ".join(self.unchecked[:3]) + (
            f" and {len(self.unchecked) - 3} more" if len(self.unchecked) > 3 else ""
        )
        return (
            f"{len(self.unchecked)} runs ({shown}) are read from compacted caches not compared with their "
            f"segments (a command compares at most {CHECK_EVENTS:,} events of runs' own caches): `recorder verify "
            "RUN_DIR` compares one"
        )
