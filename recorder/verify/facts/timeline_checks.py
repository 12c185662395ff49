"""The rules that make a recorded training timeline physically possible, whatever each event says alone.

- one-run-start: a run starts its timed region once (a resumed session continues it; it records none).
- run-start-first: no step of the run (block_start, weight_update, step_metrics, rank_step) is dated before
  `run_start`: the clock starts before the first step does.
- step-samples: every step fact of our writers (trainer, evaluator, harness) counts `samples_count` =
  step x global batch size (block_start: the samples before its step), so a step cannot be renumbered.
- step-window (our trainer): a step's generation (`generation_s` of its step_metrics) fits between the
  trainer's last event before the step and the step's weight update, and the whole step (`step_s`) before
  its step_metrics: neither can be dated earlier than the work it follows (trainer/loop.py times the step
  from after the previous step's metrics were appended to before its own are).
- save-window (our trainer): a checkpoint's save lies inside its step: weight update <= save begin <=
  save end <= commit, the loop blocked for no longer than the save took nor (our trainer, whose step
  includes its save) than the step took.
- train-stop-recorded (our trainer): a trainer session that closed its segment recorded how training
  ended (`train_stop`), and a completed one stopped at the configured `max_steps`. A session that ended
  without one (killed) leaves the run incomplete: its evaluations fail eval-after-train-stop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from recorder.store.events import Event
from recorder.store.kinds import CheckpointCommitted, RunOpened, TrainStop
from recorder.verify.facts.clocks import CLOCK_RATE
from recorder.verify.facts.sessions import TRAINER_WRITER
from recorder.verify.findings import Findings, parsed

EVALUATOR_WRITERS = frozenset({"evaluator", "harness"})
STEP_KINDS = frozenset({"block_start", "weight_update", "step_metrics", "rank_step"})
COUNTED_KINDS = frozenset(
    {"block_stop", "weight_update", "step_metrics", "checkpoint_committed", "train_stop"}
    | {"eval_start", "eval_result", "eval_stop", "eval_failed"}
)
# The trainer times a step with perf_counter, the events with the wall clock: they differ by the wall clock's
# slew (CLOCK_RATE, recorder/verify/facts/clocks.py) and by rounding.
WINDOW_SLACK_NS = 10_000_000
ASYNC_KINDS = frozenset({"checkpoint_committed", "segment_opened", "segment_closed"})  # stamped off the loop


def step_timings(e: Event) -> dict[str, float]:
    """The durations the timeline rules read from a step_metrics event (verify keeps only these)."""
    try:
        data = json.loads(e.data_json)
    except ValueError:
        return {}
    if not isinstance(data, Mapping):
        return {}
    out = {}
    for k in ("generation_s", "step_s"):
        v = data.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e9:
            out[k] = float(v)
    return out


def check_run_start(events: list[Event], found: Findings) -> None:
    """Rules one-run-start and run-start-first."""
    starts = [e for e in events if e.kind == "run_start"]
    for extra in starts[1:]:
        found.fail(extra, "one-run-start", f"a second run_start (the first at {starts[0].segment} seq {starts[0].seq})")
    if not starts:
        return
    begin = min(e.time_ns for e in starts)
    for e in events:
        if e.kind in STEP_KINDS and e.time_ns < begin:
            found.fail(e, "run-start-first", f"{e.kind} of step {e.step} is dated before run_start")
            return


def check_samples(events: list[Event], gbs: int | None, found: Findings) -> None:
    """Rule step-samples over our writers' step facts."""
    if gbs is None or gbs < 1:
        return
    for e in events:
        ours = e.writer == TRAINER_WRITER or e.writer in EVALUATOR_WRITERS
        if not ours or e.step is None or e.samples_count is None:
            continue
        if e.kind in COUNTED_KINDS:
            expected = e.step * gbs
        elif e.kind == "block_start":
            expected = (e.step - 1) * gbs
        else:
            continue
        if e.samples_count != expected:
            found.fail(
                e,
                "step-samples",
                f"{e.kind} of step {e.step} counts {e.samples_count} samples, not step x GBS = {expected}",
            )


def check_trainer_timeline(events: list[Event], opened: RunOpened | None, found: Findings) -> None:
    """Rules step-window, save-window and train-stop-recorded over our trainer's segments."""
    by_segment: dict[str, list[Event]] = {}
    for e in events:
        if e.writer == TRAINER_WRITER:
            by_segment.setdefault(e.segment, []).append(e)
    ours = opened is not None and opened.source is None  # not a foreign trainer's (TRL) timings
    max_steps = opened.config.get("max_steps") if opened is not None and ours else None
    for session in by_segment.values():
        _check_steps(session, ours, found)
        _check_stop(session, max_steps if isinstance(max_steps, int) else None, found)


def _check_steps(session: list[Event], ours: bool, found: Findings) -> None:
    timings = {e.step: step_timings(e) for e in session if e.kind == "step_metrics" and e.step is not None}
    updates = {e.step: e for e in session if e.kind == "weight_update" and e.step is not None}
    anchor: Event | None = None  # the trainer loop's latest event before the step began
    began: dict[int, Event] = {}
    for e in session:
        if e.kind == "weight_update" and anchor is not None and e.step is not None:
            began.setdefault(e.step, anchor)
            if ours:
                _check_window(e, anchor, timings.get(e.step, {}).get("generation_s"), "generated", found)
        if e.kind == "step_metrics" and e.step in began and ours:
            _check_window(e, began[e.step], timings.get(e.step, {}).get("step_s"), "took", found)
        if e.kind == "checkpoint_committed" and e.step is not None:
            _check_save(e, updates.get(e.step), timings.get(e.step, {}) if ours else {}, found)
        if e.kind not in ASYNC_KINDS:
            anchor = e


def _check_window(e: Event, anchor: Event, seconds: float | None, did: str, found: Findings) -> None:
    """Rule step-window: `e` is dated at least `seconds` (the step's own measure) after `anchor`."""
    if seconds is not None and e.time_ns - anchor.time_ns < seconds * 1e9 * (1 - CLOCK_RATE) - WINDOW_SLACK_NS:
        found.fail(
            e,
            "step-window",
            f"{e.kind} of step {e.step} is dated {(e.time_ns - anchor.time_ns) / 1e9:.3f} s after "
            f"{anchor.kind} (seq {anchor.seq}), but the step {did} {seconds:.3f} s",
        )


def _check_save(e: Event, update: Event | None, timing: dict[str, float], found: Findings) -> None:
    """Rule save-window. `timing` is empty for a foreign trainer: transformers saves after the step it timed,
    so only our trainer's step includes the save that blocked it."""
    d = parsed(CheckpointCommitted, e, Findings())  # a payload that does not parse fails in facts
    if d is None or d.save_begin_ns is None or d.blocked_ns is None or d.weight_update_ns is None:
        return
    why = []
    if d.save_begin_ns < d.weight_update_ns:
        why.append("its save begins before its weight update")
    if d.save_end_ns < d.save_begin_ns:
        why.append("its save ends before it begins")
    if e.time_ns < d.save_end_ns:
        why.append("it is committed before its save ended")
    if not 0 <= d.blocked_ns <= max(d.save_end_ns - d.save_begin_ns, 0):
        why.append(f"the loop was blocked {d.blocked_ns / 1e9:.3f} s, outside the save's own duration")
    step_s = timing.get("step_s")
    if step_s is not None and d.blocked_ns > step_s * 1e9 * (1 + CLOCK_RATE) + WINDOW_SLACK_NS:
        why.append(f"the loop was blocked {d.blocked_ns / 1e9:.3f} s in a step of {step_s:.3f} s")
    if update is not None and update.time_ns != d.weight_update_ns:
        return  # update-before-commit names it
    if why:
        found.fail(e, "save-window", f"checkpoint of step {e.step}: {'; '.join(why)}")


def _check_stop(session: list[Event], max_steps: int | None, found: Findings) -> None:
    closed = next((e for e in session if e.kind == "segment_closed"), None)
    stops = [e for e in session if e.kind == "train_stop"]
    trained = any(e.kind == "weight_update" for e in session)
    if closed is not None and trained and not stops:
        found.fail(
            closed,
            "train-stop-recorded",
            "a trainer session closed without train_stop: how training ended is not recorded (the run is incomplete)",
        )
    for e in stops:
        d = parsed(TrainStop, e, Findings())
        if d is not None and d.status == "completed" and max_steps is not None and e.step != max_steps:
            found.fail(
                e,
                "train-stop-recorded",
                f"training completed at step {e.step}, but the run's config trains {max_steps} steps",
            )
