"""Interpretations: named readings of the 6.1 rule. Each policy turns a run's facts into a `Plan`: which
evaluations the mllog shows, in which order, which one passes, and when `run_stop` is.

Each policy's docstring quotes the sentence of the rule (or of the tool) it reads. The rule text is
MLPerf Training v6.1, training_policies PR #596 ("offline evaluation"), as summarized in docs/design.md section 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from recorder.checkpoints.formats import recorded_format
from recorder.rules import passes
from replay.errors import NotEvaluatedError, NothingToEmitError, UnknownInterpretationError

if TYPE_CHECKING:  # the table is read by `recorder replay --help`, which loads no event reading (pyarrow)
    from replay.ruleset_facts import RulesetFacts
    from replay.timeline import Evaluation, Point, Timeline

Status = Literal["success", "aborted"]


@dataclass(frozen=True)
class Plan:
    """What an interpretation decides; `replay.derive` renders it as mllog lines."""

    status: Status
    evaluations: tuple[Evaluation, ...]  # emitted, in this order
    passing: Evaluation | None
    run_stop: Point
    stop_step: int  # run_stop's samples_count is stop_step * GBS
    last_step: int  # tracked_stats up to this step; block_stop is its (shifted) weight update
    offsets: tuple[tuple[int, int], ...] = ()  # (after_ns, delta_ns): training times t > after_ns move by delta
    inline: bool = False  # evaluations emitted inline after their step's tracked_stats
    why: str = ""

    def shift(self, t: int) -> int:
        return shifted(self.offsets, t)


def shifted(offsets: Sequence[tuple[int, int]], t: int) -> int:
    """A training-time `t` moved by every (after_ns, delta_ns) offset that lies strictly before it."""
    return t + sum(delta for after, delta in offsets if t > after)


Policy = Callable[["Timeline", "RulesetFacts"], Plan]


def pass_target(tl: Timeline, facts: RulesetFacts) -> float:
    """The one target evaluations are judged by: the run's recorded one, as `recorder eval` and the history
    judge them, else the ruleset's. A run whose target is not the ruleset's is marked not comparable."""
    return tl.target if tl.target is not None else facts.target


def _passes(ev: Evaluation, tl: Timeline, facts: RulesetFacts, ge: bool = False) -> bool:
    target = pass_target(tl, facts)
    return ev.accuracy >= target if ge else passes(ev.accuracy, target)


def required_steps(tl: Timeline, facts: RulesetFacts) -> list[int]:
    """The checkpoints the rule requires: those committed, or else every step from the validation start."""
    if tl.checkpoints:
        return sorted(tl.checkpoints)
    return list(range(facts.validation_start_step(tl.gbs()), tl.final_step + 1))


def _not_passed(tl: Timeline, facts: RulesetFacts, emitted: Sequence[Evaluation], name: str) -> Plan:
    """No evaluation passed: aborted if every required checkpoint was evaluated, else refuse (exit 1)."""
    evaluated = {ev.step for ev in tl.evaluations}
    missing = [s for s in required_steps(tl, facts) if s not in evaluated]
    if missing:
        failed = [s for s in missing if s in tl.failed_steps]
        note = f" (evaluation failed for {', '.join(map(str, failed))})" if failed else ""
        raise NotEvaluatedError(
            f"run {tl.run_id}: no evaluated checkpoint passes ({name}: accuracy "
            f"{'>=' if name == NEMO_RL_GE else '>'} {pass_target(tl, facts)}) and "
            f"{'step' if len(missing) == 1 else 'steps'} {', '.join(map(str, missing))} "
            f"{'is' if len(missing) == 1 else 'are'} not evaluated yet{note}: no run_stop is derived"
        )
    final = tl.final_step
    return Plan(
        "aborted",
        tuple(emitted),
        None,
        tl.weight_update(final, "the final checkpoint"),
        final,
        final,
        why="every checkpoint evaluated, none passes: aborted at the final checkpoint's weight update",
    )


def _success(
    tl: Timeline, emitted: Sequence[Evaluation], passing: Evaluation, why: str, run_stop: Point | None = None
) -> Plan:
    stop = run_stop or tl.weight_update(passing.step, "the passing checkpoint")
    return Plan("success", tuple(emitted), passing, stop, passing.step, tl.final_step, why=why)


def _in_order_until_pass(tl: Timeline, facts: RulesetFacts, ge: bool) -> tuple[list[Evaluation], Evaluation | None]:
    emitted: list[Evaluation] = []
    for ev in tl.evaluations:
        emitted.append(ev)
        if _passes(ev, tl, facts, ge):
            return emitted, ev
    return emitted, None


def official(tl: Timeline, facts: RulesetFacts) -> Plan:
    """ "After training halts, checkpoints are evaluated offline, in any order ... until one reaches the
    target accuracy." "run_stop carries the passing checkpoint's weight-update timestamp (status success),
    or the final checkpoint's timestamp with status aborted when none passes." Passing: accuracy > target."""
    emitted, passing = _in_order_until_pass(tl, facts, ge=False)
    if passing is None:
        return _not_passed(tl, facts, emitted, "official")
    return _success(tl, emitted, passing, "first passing checkpoint in evaluation order")


def earliest_passing(tl: Timeline, facts: RulesetFacts) -> Plan:
    """ "Each checkpoint stores the timestamp of its latest weight update": read as "the run reached the
    target at the earliest checkpoint that reaches it", whatever order the evaluations ran in.
    Emits the evaluated steps up to that one in ascending order."""
    passing_steps = sorted(ev.step for ev in tl.evaluations if _passes(ev, tl, facts))
    if not passing_steps:
        return _not_passed(tl, facts, list(tl.evaluations), "earliest-passing")
    first = passing_steps[0]
    emitted = sorted((ev for ev in tl.evaluations if ev.step <= first), key=lambda ev: ev.step)
    return _success(tl, emitted, emitted[-1], "earliest passing step among all evaluated checkpoints")


def include_final_save(tl: Timeline, facts: RulesetFacts) -> Plan:
    """ "So the write time of the passing checkpoint is not scored": read the other way, the run is not
    done until its passing checkpoint is committed, so run_stop is that checkpoint's commit time."""
    plan = official(tl, facts)
    step = plan.stop_step
    ckpt = tl.checkpoints.get(step)
    if ckpt is None:
        raise NothingToEmitError(
            f"run {tl.run_id}: include-final-save needs the checkpoint_committed event of "
            f"step {step}, and there is none"
        )
    if recorded_format(ckpt.payload.format).imported:
        # an imported series records no save end: its commit is dated by its files' newest modification time,
        # which a copy of the files resets (to the day of the copy), so it is never a score
        raise NothingToEmitError(
            f"run {tl.run_id}: include-final-save cannot be judged: step {step}'s checkpoint was imported, and "
            "its commit time is its files' newest modification time, not a save end its training recorded"
        )
    return Plan(
        plan.status,
        plan.evaluations,
        plan.passing,
        ckpt.committed,
        step,
        plan.last_step,
        why=f"run_stop at the commit of step {step}'s checkpoint",
    )


def _blocking_before(tl: Timeline, step: int) -> tuple[tuple[int, int], ...]:
    return tuple(
        (c.save_begin_ns, -c.blocked_ns) for s, c in sorted(tl.checkpoints.items()) if s < step and c.blocked_ns
    )


def zero_save_cost(tl: Timeline, facts: RulesetFacts) -> Plan:
    """ "The save time of every earlier checkpoint is [scored] (unless saving is asynchronous and hides
    it)": what a perfectly asynchronous checkpointer scores. Every blocking save before the passing
    (or final) step is removed from the training timeline."""
    plan = official(tl, facts)
    offsets = _blocking_before(tl, plan.stop_step)
    removed = -sum(d for _, d in offsets)
    stop = replace(plan.run_stop, time_ns=shifted(offsets, plan.run_stop.time_ns))
    return Plan(
        plan.status,
        plan.evaluations,
        plan.passing,
        stop,
        plan.stop_step,
        plan.last_step,
        offsets,
        why=f"{removed / 1e9:g} s of blocking saves before step {plan.stop_step} removed",
    )


def inline_eval(tl: Timeline, facts: RulesetFacts) -> Plan:
    """The pre-6.1 reading (the reference convergence logs): "eval_start ... eval_accuracy ... eval_stop"
    inline during training, each evaluation at its step from the validation start, its duration added to
    the timeline, and no checkpoint saves. Needs an evaluation of every step from the validation start."""
    start = facts.validation_start_step(tl.gbs())
    by_step = {ev.step: ev for ev in tl.evaluations}
    emitted: list[Evaluation] = []
    passing = None
    for step in range(start, tl.final_step + 1):
        ev = by_step.get(step)
        if ev is None:
            raise NothingToEmitError(
                f"run {tl.run_id}: inline-eval evaluates every step from the validation start {start} in order, "
                f"and step {step} was not evaluated: nothing to emit"
            )
        emitted.append(ev)
        if _passes(ev, tl, facts):
            passing = ev
            break
    if not emitted:
        raise NothingToEmitError(f"run {tl.run_id}: inline-eval: training stopped before the validation start {start}")
    last = passing or emitted[-1]  # none passes: every step was evaluated, aborted after the final one
    offsets = _blocking_before(tl, last.step + 1) + tuple((inline_at(tl, ev.step), ev.duration_ns) for ev in emitted)
    end = shifted(offsets, inline_at(tl, last.step)) + last.duration_ns
    return Plan(
        "success" if passing else "aborted",
        tuple(emitted),
        passing,
        replace(last.stop, time_ns=end),  # the last evaluation's stop, moved to where it ends inline
        last.step,
        last.step,
        offsets,
        inline=True,
        why=f"evaluations inline from step {start}; run_stop at the end of step {last.step}'s",
    )


def inline_at(tl: Timeline, step: int) -> int:
    """Where an inline evaluation of `step` begins: when the step's metrics were recorded (the step done)."""
    for m in tl.metrics:
        if m.step == step:
            return m.at.time_ns
    return tl.weight_update(step, "an inline evaluation").time_ns


def checker_order(tl: Timeline, facts: RulesetFacts) -> Plan:
    """mlperf-logging 4.1.68, training_6.1.0/closed_qwen35_397b_grpo.yaml: "v['metadata']['samples_count'] ==
    s['next_validation_samples']", starting at GBS * CEIL(2.5 + 3840/GBS), then GBS more each time.
    Evaluations emitted in ascending samples order: the consecutive prefix from the validation start."""
    gbs = tl.gbs()
    start = facts.validation_start_step(gbs)
    by_step = {ev.step: ev for ev in tl.evaluations}
    if start not in by_step:
        raise NothingToEmitError(
            f"run {tl.run_id}: checker-order has nothing it may emit: the validation-start checkpoint (step "
            f"{start}, samples {start * gbs}) was never evaluated, and the closed checker accepts only a "
            "consecutive series from it"
        )
    emitted: list[Evaluation] = []
    step = start
    while step in by_step:
        emitted.append(by_step[step])
        if _passes(by_step[step], tl, facts):
            return _success(tl, emitted, by_step[step], f"ascending from step {start}; step {step} passes first")
        step += 1
    if step <= tl.final_step:
        raise NothingToEmitError(
            f"run {tl.run_id}: checker-order: steps {start}..{step - 1} evaluated, none passes, and step {step} "
            "was not evaluated: the consecutive series stops there"
        )
    return _not_passed(tl, facts, emitted, "checker-order")


def nemo_rl_ge(tl: Timeline, facts: RulesetFacts) -> Plan:
    """NeMo-RL's >=: the reference evaluator (NeMo-RL mlperf_grpo_deferred.py) stops when "accuracy >=
    target"; the 6.1.0 checker's ATLEAST_ONE_CHECK is "v['value'] > s['target_accuracy']". Official semantics,
    passing at >= as NeMo-RL does: an accuracy exactly at the target passes here and not in `official`."""
    emitted, passing = _in_order_until_pass(tl, facts, ge=True)
    if passing is None:
        return _not_passed(tl, facts, emitted, NEMO_RL_GE)
    return _success(tl, emitted, passing, "first checkpoint in evaluation order with accuracy >= target")


@dataclass(frozen=True)
class Interpretation:
    name: str
    policy: Policy | None  # None: as-recorded (the original lines of an imported log)

    @property
    def summary(self) -> str:
        doc = (self.policy.__doc__ if self.policy else AS_RECORDED_DOC) or ""
        return " ".join(doc.split())


AS_RECORDED_DOC = """Imported logs: the original ':::MLLOG' lines, verbatim and in file order (prefixes kept)."""
AS_RECORDED = "as-recorded"
NEMO_RL_GE = "nemo-rl-ge"
# names a reading had before, still accepted wherever an interpretation is named; what is written is the new one
ALIASES = {"ge-threshold": NEMO_RL_GE}

INTERPRETATIONS: dict[str, Interpretation] = {
    i.name: i
    for i in (
        Interpretation("official", official),
        Interpretation("earliest-passing", earliest_passing),
        Interpretation("include-final-save", include_final_save),
        Interpretation("zero-save-cost", zero_save_cost),
        Interpretation("inline-eval", inline_eval),
        Interpretation("checker-order", checker_order),
        Interpretation(NEMO_RL_GE, nemo_rl_ge),
        Interpretation(AS_RECORDED, None),
    )
}


def canonical_name(name: str) -> str:
    """The interpretation's name as written and shown: an earlier name (ALIASES) gives its current one."""
    return ALIASES.get(name, name)


def get_interpretation(name: str) -> Interpretation:
    try:
        return INTERPRETATIONS[canonical_name(name)]
    except KeyError:
        raise UnknownInterpretationError(
            f"unknown interpretation {name!r}: choose one of {', '.join(INTERPRETATIONS)}"
        ) from None
