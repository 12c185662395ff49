"""The compacted Parquet file checked against the segments it caches: stale is fine, different is not.

Kept out of `recorder.verify`, which judges the log alone; `verify_with_cache` is what `recorder verify` and
`recorder report` (which read the history) run. Replay and the evaluator read the segments, never the cache,
so they call `verify_run` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from recorder.history import compact
from recorder.run import RunDir
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
) -> VerifyReport:
    """`verify_run` (under `trusted`: by default the keys RECORDER_TRUST names), then the compacted cache
    when the segments themselves are intact."""
    report = verify_run(path, keep_events=keep_events, trusted=trusted, untrusted_ok=untrusted_ok)
    if not report.problems:
        check_cache(report)
    if report.problems:
        report.events = None  # kept for intact runs only
    return report
