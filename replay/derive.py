"""derive(events, ruleset, interpretation) -> mllog lines. Pure: reads events only (no clock, no call
stack, no environment), so the same events give the same bytes anywhere.

Line order (6.1.0, official): cache_clear, init_start, the configuration keys, init_stop, run_start,
block_start, one tracked_stats per step, block_stop (final weight update), the evaluations as the plan
emits them (eval_start, eval_accuracy, eval_stop at machine times), run_stop last.
Each line's metadata.file names the event it comes from ("<writer>:<kind>"); metadata.lineno is the
line's own number in the derived file (there is no call site to report).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mlperf_logging.mllog import constants as C
from recorder.events import Event

from replay.errors import MissingFactError, NothingToEmitError
from replay.interpretations import AS_RECORDED, Plan, get_interpretation, inline_at
from replay.mllog_format import INTERVAL_END, INTERVAL_START, POINT_IN_TIME, encode_line, ns_to_ms, parse_line
from replay.rules import TRACKED_STATS, Ruleset, get_ruleset
from replay.timeline import Evaluation, Point, Timeline, build_timeline


@dataclass(frozen=True)
class Derivation:
    """A derived mllog and what it scores."""

    run_id: str
    ruleset: str
    interpretation: str
    lines: tuple[str, ...]
    status: str  # success | aborted | none
    passing_step: int | None
    run_start_ns: int | None
    run_stop_ns: int | None
    why: str = ""

    @property
    def minutes(self) -> float | None:
        """(run_stop - run_start) in minutes from the millisecond stamps, as the result summarizer computes."""
        if self.run_start_ns is None or self.run_stop_ns is None:
            return None
        return (ns_to_ms(self.run_stop_ns) - ns_to_ms(self.run_start_ns)) / 60 / 1000

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


class _Writer:
    """Accumulates lines, numbering them for metadata.lineno."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, at: Point | int, source: str | None, event_type: str, key: str, value: Any = None,
            **meta: Any) -> None:
        time_ns, src = (at.time_ns, at.source) if isinstance(at, Point) else (at, source or "")
        metadata = {"file": src, "lineno": len(self.lines) + 1, **meta}
        self.lines.append(encode_line(ns_to_ms(time_ns), event_type, key, value, metadata))


def _configs(tl: Timeline, out: _Writer) -> None:
    recorded = {c.key for c in tl.configs}
    opened = tl.opened
    if opened is not None:  # keys run_opened already states, when the trainer did not record them itself
        for key, value in ((C.SUBMISSION_BENCHMARK, tl.benchmark), (C.SUBMISSION_DIVISION, tl.division),
                           (C.GLOBAL_BATCH_SIZE, tl.global_batch_size)):
            if key not in recorded and value is not None:
                out.add(opened, None, POINT_IN_TIME, key, value)
    for c in tl.configs:
        out.add(c.at, None, POINT_IN_TIME, c.key, c.value)


def _evaluation(ev: Evaluation, gbs: int, rules: Ruleset, out: _Writer, shift: int = 0) -> None:
    samples = ev.samples_count if ev.samples_count >= 0 else rules.samples_after(ev.step, gbs)
    start = ev.start.time_ns + shift
    out.add(start, ev.start.source, INTERVAL_START, C.EVAL_START, None, samples_count=samples, step=ev.step)
    out.add(ev.result.time_ns + shift, ev.result.source, POINT_IN_TIME, C.EVAL_ACCURACY, ev.accuracy,
            samples_count=samples)
    out.add(ev.stop.time_ns + shift, ev.stop.source, INTERVAL_END, C.EVAL_STOP, None, samples_count=samples,
            step=ev.step)


def render(tl: Timeline, rules: Ruleset, plan: Plan) -> list[str]:
    """The mllog lines of a plan, in the 6.1.0 order."""
    gbs = tl.gbs()
    run_start = tl.require("run_start", tl.run_start)
    init_start = tl.require("init_start", tl.init_start)
    out = _Writer()
    out.add(init_start, None, POINT_IN_TIME, C.CACHE_CLEAR, True)
    out.add(init_start, None, INTERVAL_START, C.INIT_START)
    _configs(tl, out)
    out.add(tl.require("init_stop", tl.init_stop), None, INTERVAL_END, C.INIT_STOP)
    out.add(run_start, None, INTERVAL_START, C.RUN_START)
    if tl.block_start is None:
        raise MissingFactError(f"run {tl.run_id}: no block_start event; record it before replaying")
    bs_at, bs_step, bs_samples = tl.block_start
    out.add(plan.shift(bs_at.time_ns), bs_at.source, INTERVAL_START, C.BLOCK_START,
            samples_count=bs_samples if bs_samples is not None else 0, step=bs_step if bs_step is not None else 1)
    inline = {ev.step: ev for ev in plan.evaluations} if plan.inline else {}
    for m in tl.metrics:
        if m.step > plan.last_step:
            break
        samples = m.samples_count if m.samples_count is not None else rules.samples_after(m.step, gbs)
        out.add(plan.shift(m.at.time_ns), m.at.source, POINT_IN_TIME, TRACKED_STATS, m.data,
                samples_count=samples, step=m.step)
        if m.step in inline:  # the pre-6.1 shape: each evaluation closes a block; training resumes after it
            ev = inline[m.step]
            at = plan.shift(inline_at(tl, m.step))
            out.add(at, m.at.source, INTERVAL_END, C.BLOCK_STOP, samples_count=samples, step=m.step)
            _evaluation(ev, gbs, rules, out, shift=at - ev.start.time_ns)
            if m.step < plan.last_step:
                out.add(at + ev.duration_ns, ev.stop.source, INTERVAL_START, C.BLOCK_START, samples_count=samples,
                        step=m.step + 1)
    if not plan.inline:
        last = tl.weight_update(plan.last_step, "the final step")
        out.add(plan.shift(last.time_ns), last.source, INTERVAL_END, C.BLOCK_STOP,
                samples_count=rules.samples_after(plan.last_step, gbs), step=plan.last_step)
        for ev in plan.evaluations:
            _evaluation(ev, gbs, rules, out)
    out.add(plan.run_stop, None, INTERVAL_END, C.RUN_STOP, None,
            status=plan.status, samples_count=rules.samples_after(plan.stop_step, gbs))
    return out.lines


def _as_recorded(tl: Timeline, ruleset: str) -> Derivation:
    """The original lines; minutes as the summarizer reads them: the first run_start and first run_stop."""
    if not tl.mllog_lines:
        raise NothingToEmitError(f"run {tl.run_id}: as-recorded replays imported logs, and this run has no "
                                 "mllog_line events: use --interpretation official")
    start = stop = None
    status, passing = "none", None
    for text in tl.mllog_lines:
        parsed = parse_line(text)
        if parsed is None or parsed.time_ms is None:
            continue
        if parsed.key == C.RUN_START and start is None:
            start = int(parsed.time_ms * 1_000_000)
        elif parsed.key == C.RUN_STOP and stop is None:
            stop = int(parsed.time_ms * 1_000_000)
            meta = parsed.metadata
            status = "success" if meta.get("status") == C.SUCCESS else "aborted"
            samples = meta.get("samples_count")
            gbs = tl.global_batch_size
            if status == "success" and isinstance(samples, int) and gbs:
                passing = samples // gbs
    return Derivation(tl.run_id, ruleset, AS_RECORDED, tl.mllog_lines, status if stop else "none", passing,
                      start, stop, "the original lines")


def derive_run(events: Iterable[Event], ruleset: str, interpretation: str) -> Derivation:
    """Derive the mllog of a run under an interpretation, with what it scores."""
    rules = get_ruleset(ruleset)
    interp = get_interpretation(interpretation)
    tl = build_timeline(events)
    if interp.policy is None:
        return _as_recorded(tl, ruleset)
    tl.require_consistent()
    plan = interp.policy(tl, rules)
    lines = render(tl, rules, plan)
    run_start = tl.require("run_start", tl.run_start).time_ns
    return Derivation(tl.run_id, ruleset, interpretation, tuple(lines), plan.status,
                      plan.passing.step if plan.passing else None, run_start, plan.run_stop.time_ns, plan.why)


def derive(events: Iterable[Event], ruleset: str, interpretation: str) -> list[str]:
    """The mllog lines (without line endings) of a run under `interpretation` of `ruleset`."""
    return list(derive_run(events, ruleset, interpretation).lines)
