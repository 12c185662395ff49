"""Whether a checkpoint series belongs to the run whose training log was imported first.

A submitter imports NeMo-RL's training mllog (`recorder import`) and then its checkpoint series into the same
run. They are one run only if they agree: the global batch size, and for every step both hold, the samples
consumed and when the step's weights were updated: after the log's previous step, and no later than the
step's own tracked_stats (logged once its update is done) and the log's block_stop. A series step past the
log's last step (a log cut short, or a series of another run), or one the log's steps span but that it holds
no tracked_stats for, would have the derived log tell another training. The first difference is named and the
join refused: nothing is written, no block is moved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from recorder.errors import InputError
from recorder.store.events import Event


class LogSeriesMismatchError(InputError):
    """A checkpoint series that disagrees with the training log already imported into the run."""


@dataclass(frozen=True, slots=True)
class SeriesStep:
    """One checkpoint's facts, as the series' file `source` gives them (times are Unix-epoch ns)."""

    step: int
    samples: int
    weight_update_ns: int
    source: Path


def check_join(run: Path, events: Sequence[Event], gbs: int | None, steps: Sequence[SeriesStep]) -> None:
    """LogSeriesMismatchError naming the first difference between the run's training log and the series."""
    why = first_difference(events, gbs, steps)
    if why is not None:
        raise LogSeriesMismatchError(
            f"{why}: the training log in {run} and this series are not one run; import the training log and "
            "the series of the same run (a log cut short: import it whole)"
        )


def first_difference(events: Sequence[Event], gbs: int | None, steps: Sequence[SeriesStep]) -> str | None:
    """The first way `steps` (ascending) and the training log among `events` disagree, in words; None when
    they agree or the run holds no training log (no step_metrics)."""
    logged: dict[int, Event] = {e.step: e for e in events if e.kind == "step_metrics" and e.step is not None}
    if not logged:
        return None
    opened = next((e for e in events if e.kind == "run_opened"), None)
    logged_gbs = opened.data.get("global_batch_size") if opened is not None else None
    if isinstance(logged_gbs, int) and gbs is not None and logged_gbs != gbs:
        return f"{steps[0].source}: global batch size {gbs}, the training log's global_batch_size is {logged_gbs}"
    stop = next((e for e in reversed(events) if e.kind == "block_stop" and e.step is not None), None)
    last = stop.step if stop is not None and stop.step is not None else max(logged)
    ends = (
        f"the training log ends at step {last} ({'its block_stop' if stop is not None else 'its last tracked_stats'})"
    )
    first = min(logged)
    for s in steps:
        if s.step > last:
            return f"{s.source}: step {s.step}, and {ends}"
        here = logged.get(s.step)
        if here is None and first <= s.step < last:  # the final one may be missing (older NeMo-RL dropped it)
            return f"{s.source}: step {s.step}, which the training log holds no tracked_stats for"
        if here is not None and here.samples_count is not None and here.samples_count != s.samples:
            return (
                f"{s.source}: step {s.step} consumed {s.samples} samples, the training log's tracked_stats "
                f"of step {s.step} says samples_count {here.samples_count}"
            )
        why = _update_out_of_place(s, logged, stop)
        if why is not None:
            return why
    return None


def _update_out_of_place(s: SeriesStep, logged: dict[int, Event], stop: Event | None) -> str | None:
    """Why step `s`'s weight update cannot be the training log's (None: it fits): it must come after the
    log's previous step and no later than the step's own tracked_stats or the log's block_stop."""
    updated = f"{s.source}: step {s.step}'s weights were updated at {s.weight_update_ns} ns"
    before, here = logged.get(s.step - 1), logged.get(s.step)
    if before is not None and s.weight_update_ns <= before.time_ns:
        return f"{updated}, not after the training log's step {s.step - 1} ({before.time_ns} ns)"
    if here is not None and s.weight_update_ns > here.time_ns:
        return (
            f"{updated}, {(s.weight_update_ns - here.time_ns) / 1e9:.3f} s after the training log's tracked_stats of "
            f"step {s.step} ({here.time_ns} ns), which is logged once the step's update is done"
        )
    if stop is not None and s.weight_update_ns > stop.time_ns:
        return (
            f"{updated}, {(s.weight_update_ns - stop.time_ns) / 1e9:.3f} s after the training log's block_stop "
            f"({stop.time_ns} ns)"
        )
    return None
