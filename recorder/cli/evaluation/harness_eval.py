"""`recorder eval --harness lm-eval`: zero-shot task scores of a run's checkpoints, with the options of `eval`
that the harness reads (the others score the benchmark's task and are refused beside --harness)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from recorder.cli.shared.interrupt import eval_session_interrupted
from recorder.cli.terminal.output import console, label, line

if TYPE_CHECKING:
    from evaluator.harness.run_session import HarnessOptions, HarnessSummary
    from evaluator.order import Order
    from evaluator.session import StepOutcome
    from evaluator.settings import Options


def check_harness_options(
    harness: str | None,
    task: Path | None,
    backend: str,
    command: str | None,
    tasks: str | None,
    steps: str | None,
    data_dir: Path | None,
) -> None:
    """The options of one way of scoring given to the other: refused before anything is read."""
    from evaluator.harness.errors import HarnessOptionsError

    if harness is not None and (task is not None or backend != "torch" or command is not None):
        raise HarnessOptionsError("--task, --backend and --command score the benchmark's task: drop --harness")
    if harness is None and (tasks is not None or steps is not None or data_dir is not None):
        raise HarnessOptionsError("--tasks, --steps and --data-dir choose zero-shot tasks: add --harness lm-eval")


def _order_from(text: str, option: str) -> Order:
    """`text` parsed as --order is, an error naming `option`, the one the user gave."""
    from evaluator.errors import OrderError
    from evaluator.order import parse_order

    try:
        return parse_order(text)
    except OrderError as e:
        raise OrderError(str(e).replace("--order", option, 1)) from None


def harness_eval(
    run_dir: Path, given: Options, *, order: str, tasks: str | None, steps: str | None, data_dir: Path | None
) -> None:
    """`eval --harness lm-eval`: of the options, those the harness reads (the others are the benchmark's)."""
    from evaluator.errors import EvaluationsFailed
    from evaluator.harness.errors import HarnessOptionsError
    from evaluator.harness.run_session import HarnessOptions
    from evaluator.harness.taskset import DEFAULT_TASKS, parse_tasks
    from evaluator.order import parse_order
    from evaluator.settings import Options

    problems = []
    if order != "ascending" and steps is not None:
        problems.append("--order and --steps: give one of them")
    if given.all:
        problems.append("--all: the harness scores every checkpoint asked for anyway (there is no target)")
    if problems:
        raise HarnessOptionsError("with --harness: " + "; ".join(problems))
    options = HarnessOptions(
        tasks=parse_tasks(tasks if tasks is not None else ",".join(DEFAULT_TASKS)),
        data_dir=data_dir,
        evaluation=Options(
            order=_order_from(steps, "--steps") if steps is not None else parse_order(order),
            limit=given.limit,
            batch_size=given.batch_size,
            workers=given.workers,
            ray_address=given.ray_address,
            allow_gaps=given.allow_gaps,
            fingerprint=given.fingerprint,
            fingerprint_tolerance=given.fingerprint_tolerance,
            force=given.force,
            dtype=given.dtype,
            device=given.device,
            model_code=given.model_code,
            model_factory=given.model_factory,
        ),
    )
    summary = _harness_session(run_dir, options)
    for c in summary.closed:
        console.print(f"closed an interrupted evaluation: {c}", highlight=False)
    head = f"run {summary.run_id}: {sum(o.status == 'scored' for o in summary.outcomes)} checkpoint(s) scored"
    head += f" on {', '.join(t.name for t in summary.tasks)}"
    head += f", events in {summary.segment}" if summary.segment else " (nothing to do: every task already scored)"
    if summary.remaining:
        head += f"; not evaluated (--limit): steps {', '.join(map(str, summary.remaining))}"
    console.print(head, highlight=False)
    if summary.failures:
        failed = ", ".join(str(o.step) for o in summary.failures)
        raise EvaluationsFailed(
            f"{len(summary.failures)} evaluation(s) failed (steps {failed}); each is an "
            f"eval_failed event: see `recorder evals {run_dir}`"
        )


def _harness_session(run_dir: Path, options: HarnessOptions) -> HarnessSummary:
    """The zero-shot session, each outcome printed as it comes; Ctrl-C said as `_interrupted` says it."""
    from evaluator.harness.run_session import evaluate_harness

    evaluated = 0

    def on_outcome(o: StepOutcome) -> None:
        nonlocal evaluated
        evaluated += o.status != "skipped"
        _print_harness_outcome(o)

    try:
        return evaluate_harness(run_dir, options, on_outcome=on_outcome)
    except KeyboardInterrupt as e:
        raise eval_session_interrupted(e, evaluated) from None


def _print_harness_outcome(o: Any) -> None:
    if o.status == "failed":
        console.print(line(f"step {o.step}:", label("FAILED", "bold red"), f"{o.error}: {o.reason}"))
    elif o.status == "skipped":
        console.print(f"step {o.step}: {o.reason}", highlight=False)
    else:
        scores = "  ".join(f"{k} {v:.4f}" for k, v in o.scores.items())
        console.print(f"step {o.step}: {scores} (in {o.seconds:.1f} s -> {o.results})", highlight=False)
