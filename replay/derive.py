"""derive(events, ruleset, interpretation) -> mllog lines. Pure: reads events only (no clock, no call
stack, no environment), so the same events give the same bytes anywhere.

Line order (6.1.0, official): cache_clear, init_start, the configuration keys, init_stop, run_start,
block_start, one tracked_stats per step, block_stop (final weight update), the evaluations as the plan
emits them (eval_start, eval_accuracy, eval_stop at machine times), run_stop last.
Each line's metadata.file names the event it comes from ("<writer>:<kind>"); metadata.lineno is the
line's own number in the derived file (there is no call site to report).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mlperf_logging.mllog import constants as C

from recorder.rules import BENCHMARK
from recorder.store import kinds
from recorder.store.events import Event
from replay.errors import (
    InterpretationNotApplicableError,
    LineTooLongError,
    MissingFactError,
    NoCheckpointError,
    NothingToEmitError,
)
from replay.interpretations import AS_RECORDED, Plan, get_interpretation, inline_at
from replay.mllog_format import (
    INTERVAL_END,
    INTERVAL_START,
    LINE_LIMIT,
    POINT_IN_TIME,
    ParsedLine,
    encode_line,
    ns_to_ms,
    parse_line,
)
from replay.recorded_types import first_type_problem
from replay.ruleset_facts import FACTS, TRACKED_STATS, RulesetFacts
from replay.rulesets import KnownRuleset, get_known
from replay.source import EventSource, InMemory, StepData
from replay.timeline import Config, Evaluation, Point, StepMetrics, Timeline, build_timeline

# `none`: the interpretation derives no run_stop (the as-recorded log has no run_stop line).
DerivedStatus = Literal["success", "aborted", "none"]


@dataclass(frozen=True)
class Derivation:
    """A derived mllog and what it scores."""

    run_id: str
    ruleset: str
    interpretation: str
    lines: Collection[str]  # a tuple, or RenderedLines: written again from the events each time it is read
    status: DerivedStatus
    passing_step: int | None
    run_start_ns: int | None
    run_stop_ns: int | None
    why: str = ""
    run_start_ms: float | None = None  # the stamps as the log carries them
    run_stop_ms: float | None = None
    missing_keys: tuple[str, ...] = ()  # configuration keys the ruleset requires that the run did not record

    @property
    def minutes(self) -> float | None:
        """(run_stop - run_start) / 60 / 1000 from the logged millisecond stamps, as the result summarizer's
        `_query_mlperf_strong_scaling_score` computes it."""
        if self.run_start_ms is None or self.run_stop_ms is None:
            return None
        return (self.run_stop_ms - self.run_start_ms) / 60 / 1000

    def text(self) -> str:
        """The whole log as one string (small logs: a long run's is written with `chunks`)."""
        return "".join(line + "\n" for line in self.lines)

    def chunks(self, size: int = 1 << 20) -> Iterator[bytes]:
        """The log as UTF-8, about `size` bytes at a time, produced as it is written."""
        batch: list[str] = []
        held = 0
        for line in self.lines:
            batch.append(line + "\n")
            held += len(line) + 1
            if held >= size:
                yield "".join(batch).encode()
                batch, held = [], 0
        if batch:
            yield "".join(batch).encode()


class RenderedLines(Collection[str]):
    """A derived log's lines, rendered from the run's facts (and re-read events) each time they are iterated:
    a long run's log is written as it is produced, never held. Its length is counted by the first pass."""

    def __init__(self, render: Callable[[], Iterator[str]]) -> None:
        self._render = render
        self._count: int | None = None

    def __iter__(self) -> Iterator[str]:
        count = 0
        for line in self._render():
            count += 1
            yield line
        self._count = count

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(1 for _ in self._render())
        return self._count

    def __contains__(self, item: object) -> bool:
        return any(line == item for line in self)


class _Writer:
    """Numbers lines for metadata.lineno, as they are produced."""

    def __init__(self) -> None:
        self.count = 0

    def add(
        self, at: Point | int, source: str | None, event_type: str, key: str, value: Any = None, **meta: Any
    ) -> str:
        time_ns, src = (at.time_ns, at.source) if isinstance(at, Point) else (at, source or "")
        self.count += 1
        metadata = {"file": src, "lineno": self.count, **meta}
        line = encode_line(ns_to_ms(time_ns), event_type, key, value, metadata)
        if len(line) > LINE_LIMIT:  # refused before any checker reads it: its time is quadratic in the length
            where = f"step {meta['step']}'s" if meta.get("step") is not None else "its"
            raise LineTooLongError(
                f"{src or 'the run'}: {where} {key} line would be {len(line):,} characters, over the {LINE_LIMIT:,} "
                "an mllog line may have (the compliance checker's time grows with the square of a line's "
                "length); record shorter values"
            )
        return line


def _configs(tl: Timeline, facts: RulesetFacts, out: _Writer) -> Iterator[str]:
    """Recorded configuration keys, plus those run_opened states that were not recorded, in the checker's
    own key order (its checks read earlier keys: opt_base_learning_rate needs global_batch_size first),
    then any other keys in recorded order."""
    configs = list(tl.configs)
    recorded = {c.key for c in configs}
    if tl.opened is not None:
        for key, value in (
            (C.SUBMISSION_BENCHMARK, tl.benchmark),
            (C.SUBMISSION_DIVISION, tl.division),
            (C.GLOBAL_BATCH_SIZE, tl.global_batch_size),
        ):
            if key not in recorded and value is not None:
                configs.append(Config(key, value, tl.opened))
    rank = {key: i for i, key in enumerate(facts.required_keys(tl.division or C.OPEN))}
    for c in sorted(configs, key=lambda c: rank.get(c.key, len(rank))):
        yield out.add(c.at, None, POINT_IN_TIME, c.key, c.value)


def _evaluation(ev: Evaluation, gbs: int, facts: RulesetFacts, out: _Writer, shift: int = 0) -> Iterator[str]:
    samples = ev.samples_count if ev.samples_count >= 0 else facts.samples_after(ev.step, gbs)
    start = ev.start.time_ns + shift
    yield out.add(start, ev.start.source, INTERVAL_START, C.EVAL_START, None, samples_count=samples, step=ev.step)
    yield out.add(
        ev.result.time_ns + shift, ev.result.source, POINT_IN_TIME, C.EVAL_ACCURACY, ev.accuracy, samples_count=samples
    )
    yield out.add(
        ev.stop.time_ns + shift, ev.stop.source, INTERVAL_END, C.EVAL_STOP, None, samples_count=samples, step=ev.step
    )


def render(
    tl: Timeline, facts: RulesetFacts, plan: Plan, step_data: Callable[[StepMetrics], Any] | None = None
) -> list[str]:
    """The mllog lines of a plan, in the 6.1.0 order (a timeline built from a list of events)."""
    return list(render_lines(tl, facts, plan, step_data or _kept_data))


def _kept_data(m: StepMetrics) -> dict[str, Any]:
    if m.event is None:
        raise MissingFactError(f"step {m.step}: its metrics were not kept; render from the run's events")
    return m.event.data


def render_lines(
    tl: Timeline, facts: RulesetFacts, plan: Plan, step_data: Callable[[StepMetrics], Any]
) -> Iterator[str]:
    """The mllog lines of a plan, in the 6.1.0 order, one at a time: each step's metrics are read back
    through `step_data` when their line is written. Facts that are missing raise before the first line."""
    gbs = tl.gbs()
    run_start = tl.require("run_start", tl.run_start)
    init_start = tl.require("init_start", tl.init_start)
    init_stop = tl.require("init_stop", tl.init_stop)
    if tl.block_start is None:
        raise MissingFactError(f"run {tl.run_id}: no block_start event; record it before replaying")
    last, last_step = None, plan.last_step
    if not plan.inline:
        last = tl.weight_update(plan.last_step, "the final step")
        if tl.block_stop is not None and tl.block_stop[1] > plan.last_step:
            # training went on past the last checkpoint (a final save left out as unfinished): the block it
            # recorded is the training's, and a checkpoint left out never moves it
            last, last_step = tl.block_stop
    return _lines(tl, facts, plan, step_data, gbs, run_start, init_start, init_stop, tl.block_start, last, last_step)


def _lines(
    tl: Timeline,
    facts: RulesetFacts,
    plan: Plan,
    step_data: Callable[[StepMetrics], Any],
    gbs: int,
    run_start: Point,
    init_start: Point,
    init_stop: Point,
    block_start: tuple[Point, int | None, int | None],
    last: Point | None,
    last_step: int,
) -> Iterator[str]:
    out = _Writer()
    yield out.add(init_start, None, POINT_IN_TIME, C.CACHE_CLEAR, True)
    yield out.add(init_start, None, INTERVAL_START, C.INIT_START)
    yield from _configs(tl, facts, out)
    yield out.add(init_stop, None, INTERVAL_END, C.INIT_STOP)
    yield out.add(run_start, None, INTERVAL_START, C.RUN_START)
    bs_at, bs_step, bs_samples = block_start
    yield out.add(
        plan.shift(bs_at.time_ns),
        bs_at.source,
        INTERVAL_START,
        C.BLOCK_START,
        samples_count=bs_samples if bs_samples is not None else 0,
        step=bs_step if bs_step is not None else 1,
    )
    inline = {ev.step: ev for ev in plan.evaluations} if plan.inline else {}
    for m in tl.metrics:
        if m.step > last_step:
            break
        samples = m.samples_count if m.samples_count is not None else facts.samples_after(m.step, gbs)
        yield out.add(
            plan.shift(m.at.time_ns),
            m.at.source,
            POINT_IN_TIME,
            TRACKED_STATS,
            step_data(m),
            samples_count=samples,
            step=m.step,
        )
        if m.step in inline:  # the pre-6.1 shape: each evaluation closes a block; training resumes after it
            ev = inline[m.step]
            at = plan.shift(inline_at(tl, m.step))
            yield out.add(at, m.at.source, INTERVAL_END, C.BLOCK_STOP, samples_count=samples, step=m.step)
            yield from _evaluation(ev, gbs, facts, out, shift=at - ev.start.time_ns)
            if m.step < plan.last_step:
                yield out.add(
                    at + ev.duration_ns,
                    ev.stop.source,
                    INTERVAL_START,
                    C.BLOCK_START,
                    samples_count=samples,
                    step=m.step + 1,
                )
    if last is not None:
        yield out.add(
            plan.shift(last.time_ns),
            last.source,
            INTERVAL_END,
            C.BLOCK_STOP,
            samples_count=facts.samples_after(last_step, gbs),
            step=last_step,
        )
        for ev in plan.evaluations:
            yield from _evaluation(ev, gbs, facts, out)
    yield out.add(
        plan.run_stop,
        None,
        INTERVAL_END,
        C.RUN_STOP,
        None,
        status=plan.status,
        samples_count=facts.samples_after(plan.stop_step, gbs),
    )


def summarizer_start_stop(lines: Iterable[str]) -> tuple[ParsedLine | None, ParsedLine | None]:
    """run_start and run_stop as mlperf-logging's result summarizer picks them (`_query_run_start_stop`):
    scanning parsed lines in order, each run_start/run_stop overwrites the last, stopping once both are set."""
    start = stop = None
    for text in lines:
        p = parse_line(text)
        if p is None or p.record is None:
            continue
        if p.key == C.RUN_START:
            start = p
        if p.key == C.RUN_STOP:
            stop = p
        if start is not None and stop is not None:
            break
    return start, stop


def recorded_lines(tl: Timeline, source: EventSource) -> Iterator[str]:
    """An imported log's verbatim lines, segment by segment (segments by their first line's time), each in seq
    order, read back from the source as they are written."""
    for segment in tl.mllog_segments:
        for e in source.segment_events(segment, "mllog_line"):
            yield kinds.MllogLine.from_event(e).line


def _as_recorded(tl: Timeline, source: EventSource, ruleset: KnownRuleset) -> Derivation:
    """The original lines; minutes from the run_start and run_stop the result summarizer would read."""
    if not tl.mllog_segments:
        raise NothingToEmitError(
            f"run {tl.run_id}: as-recorded replays imported logs, and this run has no "
            "mllog_line events: use --interpretation official"
        )
    start, stop = summarizer_start_stop(recorded_lines(tl, source))
    why = "the original lines"
    mistyped = first_type_problem(recorded_lines(tl, source), ruleset)
    if mistyped is not None:  # a verdict on lines read otherwise than they say is no verdict
        start = stop = None
        why = f"no verdict: the log's {mistyped}"
    elif start is None or stop is None:
        why = f"no minutes: the log has no {'run_start' if start is None else 'run_stop'} line"
    elif start.parser_time_ms is None or stop.parser_time_ms is None:
        why = f"no minutes: its {'run_start' if start.parser_time_ms is None else 'run_stop'} line has no time_ms"
    status: DerivedStatus = "none"
    passing: int | None = None
    if stop is not None:
        meta = stop.metadata
        status = "success" if meta.get(C.STATUS) == C.SUCCESS else "aborted"
        samples, gbs = meta.get(C.SAMPLES_COUNT), tl.global_batch_size
        if status == "success" and isinstance(samples, int) and gbs:
            passing = samples // gbs
    start_ms = start.parser_time_ms if start is not None else None
    stop_ms = stop.parser_time_ms if stop is not None else None
    return Derivation(
        tl.run_id,
        ruleset.name,
        AS_RECORDED,
        RenderedLines(lambda: recorded_lines(tl, source)),
        status,
        passing,
        _ms_to_ns(start_ms),
        _ms_to_ns(stop_ms),
        why,
        start_ms,
        stop_ms,
    )


def _ms_to_ns(ms: float | None) -> int | None:
    return int(ms * 1_000_000) if ms is not None and math.isfinite(ms) else None


def derive_run(events: Iterable[Event], ruleset: str, interpretation: str) -> Derivation:
    """Derive the mllog of a run under an interpretation of the ruleset named `ruleset`, with what it scores
    (events in memory; the lines as a tuple)."""
    kept = events if isinstance(events, Sequence) else list(events)
    d = derive_from(build_timeline(kept), InMemory(kept), get_known(ruleset), interpretation)
    return dataclasses.replace(d, lines=tuple(iter(d.lines)))  # iter: tuple() would ask len() first, a pass


def derive_from(tl: Timeline, source: EventSource, ruleset: KnownRuleset, interpretation: str) -> Derivation:
    """Derive the mllog of a run from its facts under an interpretation, with what it scores. The lines are
    RenderedLines: produced from the facts, and from the events `source` reads back, each time they are
    iterated (a long run's log is written as it is produced). Every refusal is raised here, before any line."""
    interp = get_interpretation(interpretation)
    interpretation = interp.name  # an earlier name (interpretations.ALIASES) is derived under the current one
    if interp.policy is None:
        return _as_recorded(tl, source, ruleset)
    facts = require_offline_rule(tl, ruleset, interpretation)
    tl.require_consistent()
    if tl.weight_updates and not tl.checkpoints:  # killed (or still training) before the validation start
        raise NoCheckpointError(
            f"run {tl.run_id}: no checkpoint: training stopped at step {tl.final_step}, before its first "
            f"checkpoint (step {facts.validation_start_step(tl.gbs())}), so no run_stop and no minutes exist"
        )
    plan = interp.policy(tl, facts)
    render_lines(tl, facts, plan, _kept_data)  # its checks raise now, not when the lines are first read
    run_start = tl.require("run_start", tl.run_start).time_ns
    stop = plan.run_stop.time_ns
    return Derivation(
        tl.run_id,
        ruleset.name,
        interpretation,
        RenderedLines(lambda: render_lines(tl, facts, plan, StepData(source))),
        plan.status,
        plan.passing.step if plan.passing else None,
        run_start,
        stop,
        plan.why,
        float(ns_to_ms(run_start)),
        float(ns_to_ms(stop)),
        missing_keys(tl, facts),
    )


def require_offline_rule(tl: Timeline, ruleset: KnownRuleset, interpretation: str) -> RulesetFacts:
    """The facts of the offline-evaluation rule the interpretations other than as-recorded read: refused where
    it does not apply (another benchmark, or a ruleset that states no such rule: replay.ruleset_facts). A run
    that states no benchmark is the recorder's own (qwen35_397b_grpo)."""
    benchmark = tl.benchmark or BENCHMARK
    facts = ruleset.offline_facts(benchmark)
    if facts is None:
        stated = ", ".join(f"{f.benchmark} under training {f.ruleset}" for f in FACTS.values())
        raise InterpretationNotApplicableError(
            f"run {tl.run_id}: interpretation {interpretation!r} reads the offline-evaluation rule, which "
            f"applies to {stated}, not to {benchmark} under training {ruleset.name}: "
            "use --interpretation as-recorded"
        )
    return facts


def missing_keys(tl: Timeline, facts: RulesetFacts) -> tuple[str, ...]:
    """Required configuration keys neither recorded as mllog_config nor stated by run_opened."""
    have = {c.key for c in tl.configs}
    if tl.opened is not None:
        have |= {
            k
            for k, v in (
                (C.SUBMISSION_BENCHMARK, tl.benchmark),
                (C.SUBMISSION_DIVISION, tl.division),
                (C.GLOBAL_BATCH_SIZE, tl.global_batch_size),
            )
            if v is not None
        }
    return tuple(k for k in facts.required_keys(tl.division or C.OPEN) if k not in have)


def derive(events: Iterable[Event], ruleset: str, interpretation: str) -> list[str]:
    """The mllog lines (without line endings) of a run under `interpretation` of `ruleset`."""
    return list(derive_run(events, ruleset, interpretation).lines)
