"""The call sequence the reference logger (NeMo-RL's MLPerf GRPO logger) makes, rebuilt from a real log.

Each `:::MLLOG` line of a reference convergence log came from one start/end/event call; the call's
arguments are the line minus what mllog adds (time, caller file and line). The reference passes
`unique=False` for tracked_stats, `time_ms` for a held evaluation's block_stop/eval_start and for the
backdated run_stop, and, when the logger rejects a keyword (plain mllog has no `unique`), retries without
`unique` and `time_ms`. `drive` replays those calls against any mllog-like logger with a controlled clock.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METHOD = {"INTERVAL_START": "start", "INTERVAL_END": "end", "POINT_IN_TIME": "event"}
# Keys whose time the reference passes explicitly (a held eval is backdated; run_stop carries a weight
# update time in the deferred flow).
TIME_OVERRIDE = {"block_stop", "eval_start", "run_stop"}


@dataclass(frozen=True)
class Call:
    method: str
    kwargs: dict[str, Any]
    time_ms: int  # what the line says: the clock at the call, or the override


def calls_from_log(path: Path) -> list[Call]:
    calls = []
    for text in path.read_text().splitlines():
        if ":::MLLOG" not in text:
            continue
        rec = json.loads(text.split(":::MLLOG ", 1)[1])
        metadata = {k: v for k, v in rec["metadata"].items() if k not in ("file", "lineno")}
        kwargs: dict[str, Any] = {"key": rec["key"], "metadata": metadata}
        if rec["value"] is not None:
            kwargs["value"] = rec["value"]
        if rec["key"] == "tracked_stats":
            kwargs["unique"] = False
        if rec["key"] in TIME_OVERRIDE:
            kwargs["time_ms"] = rec["time_ms"]
        calls.append(Call(METHOD[rec["event_type"]], kwargs, rec["time_ms"]))
    return calls


class Clock:
    """A settable clock both loggers read: ms for mllog's `_current_time_ms`, ns for ours."""

    def __init__(self) -> None:
        self.ms = 0

    def now_ms(self) -> int:
        return self.ms

    def now_ns(self) -> int:
        return self.ms * 1_000_000


def _call(logger: Any, method: str, kwargs: dict[str, Any]) -> None:
    fn: Callable[..., None] = getattr(logger, method)
    try:
        inspect.signature(fn).bind(**kwargs)
    except TypeError:  # the reference's fallback for loggers without `unique`, decided before the one call site
        kwargs = {k: v for k, v in kwargs.items() if k not in ("unique", "time_ms")}
    fn(**kwargs)


def drive(logger: Any, calls: list[Call], clock: Clock) -> None:
    for c in calls:
        # Overridden calls still tick the clock, to a time different from the line's, so a logger that
        # ignored the override would be caught.
        clock.ms = c.time_ms + (5_000 if "time_ms" in c.kwargs else 0)
        _call(logger, c.method, c.kwargs)
