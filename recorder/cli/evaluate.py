"""`recorder eval` and `recorder evals`. Imports only typer/rich here; the evaluator loads lazily."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.table import Table

from recorder.cli.output import console, label, line, warning
from recorder.cli.signing import SigningKeyOption, apply_signing_key
from recorder.kinds import EvalFailed, EvalResult, EvalStart
from recorder.rules import not_comparable, pass_target, passes, recorded_target

LOCAL_RAY = "local"

if TYPE_CHECKING:
    from evaluator.attempts import Attempt
    from evaluator.session import Outcome, Summary


def eval_command(
    run_dir: Annotated[Path, typer.Argument(help="The run directory (training must have stopped).")],
    order: Annotated[str, typer.Option(help="ascending | descending | S1,S2,... (only those steps).")] = "ascending",
    all_: Annotated[
        bool, typer.Option("--all", help="Evaluate every checkpoint, not only up to the first pass.")
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            help="Evaluation workers; more than 1 runs Ray actors, each evaluating whole checkpoints in --order "
            "(one GPU each where the cluster has one per worker)."
        ),
    ] = 1,
    ray: Annotated[
        bool, typer.Option("--ray", help="Workers as Ray actors (a local cluster), even with one worker.")
    ] = False,
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="Use the running Ray cluster at this address (implies --ray).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Evaluate at most N checkpoints in this session.")] = None,
    batch_size: Annotated[
        int, typer.Option(help="Samples generated per batch (the score does not depend on it).")
    ] = 64,
    allow_gaps: Annotated[
        bool, typer.Option("--allow-gaps", help="Evaluate a series that misses checkpoints.")
    ] = False,
    fingerprint: Annotated[Literal["on", "off"], typer.Option(help="Check each checkpoint's fingerprint.")] = "on",
    fingerprint_tolerance: Annotated[float, typer.Option(help="Largest |recomputed - recorded| fingerprint.")] = 0.005,
    harness: Annotated[
        Literal["lm-eval"] | None,
        typer.Option(help="Score zero-shot tasks with lm-evaluation-harness instead of the benchmark's pass@k."),
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            help="--harness: comma-separated tasks (default: arc_easy,arc_challenge,hellaswag,openbookqa,piqa,"
            "winogrande,siqa)."
        ),
    ] = None,
    steps: Annotated[str | None, typer.Option(help="--harness: only these steps, S1,S2,... (default: all).")] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="--harness: directory of <task>.jsonl files (default: $RECORDER_EVAL_DATA).")
    ] = None,
    task: Annotated[
        Path | None,
        typer.Option(
            help="A task spec (TOML). An imported run: its task and settings. A run of `recorder train`: where the "
            "spec it recorded lies now (another is refused)."
        ),
    ] = None,
    backend: Annotated[
        Literal["torch", "vllm", "command"], typer.Option(help="torch (ours), vllm, or command (--command).")
    ] = "torch",
    command: Annotated[
        str | None,
        typer.Option(help='--backend command: your evaluation, e.g. "python ev.py --ckpt {checkpoint} --out {out}".'),
    ] = None,
    dtype: Annotated[
        Literal["fp32", "bf16", "fp16"] | None,
        typer.Option(
            help="The weights' dtype (default: the dtype the run rolled out in, the rule's precision; another "
            "one is recorded as not the rule's)."
        ),
    ] = None,
    device: Annotated[str, typer.Option(help="Where the model runs: cpu, cuda, cuda:1, ...")] = "cpu",
    model_code: Annotated[
        Path | None, typer.Option(help="The root of your model's code (with --model-factory): imported from there.")
    ] = None,
    model_factory: Annotated[
        str | None,
        typer.Option(help="package.module:function under --model-code: called with the checkpoint's config."),
    ] = None,
    tensor_parallel_size: Annotated[int, typer.Option(help="--backend vllm: GPUs per model replica.")] = 1,
    pipeline_parallel_size: Annotated[int, typer.Option(help="--backend vllm: pipeline stages.")] = 1,
    enable_expert_parallel: Annotated[
        bool, typer.Option("--enable-expert-parallel", help="--backend vllm: spread MoE experts over the GPUs.")
    ] = False,
    quantization: Annotated[
        str | None, typer.Option(help="--backend vllm: the rollout's quantization (fp8, awq, ...).")
    ] = None,
    trust_remote_code: Annotated[
        bool, typer.Option("--trust-remote-code", help="Run model code shipped in the checkpoint directory.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Evaluate a run that fails verify; its results are marked UNVERIFIED.")
    ] = False,
    signing_key: SigningKeyOption = None,
) -> None:
    """Evaluate a run's checkpoints offline (6.1 rule): integrity checks, pass@k, eval events, results.json.

    Exit 0 when a checkpoint passed, 1 when none did or an evaluation failed, 2 for bad input.
    With --harness lm-eval: zero-shot task scores per checkpoint (exit 0 unless an evaluation failed).
    """
    from evaluator.errors import EvaluationsFailed, NothingPassedError
    from evaluator.order import parse_order
    from evaluator.settings import Options

    apply_signing_key(signing_key)
    # As in `recorder train`: --ray is a flag, --ray-address a cluster. Ray's own "local" starts a new cluster.
    address = ray_address or (LOCAL_RAY if ray else None)
    if harness is not None:
        if task is not None or backend != "torch" or command is not None:
            from evaluator.harness.errors import HarnessOptionsError

            raise HarnessOptionsError("--task, --backend and --command score the benchmark's task: drop --harness")
        _harness_eval(
            run_dir,
            tasks=tasks,
            steps=steps,
            data_dir=data_dir,
            order=order,
            all_=all_,
            workers=workers,
            ray=address,
            limit=limit,
            batch_size=batch_size,
            allow_gaps=allow_gaps,
            fingerprint=fingerprint,
            fingerprint_tolerance=fingerprint_tolerance,
            force=force,
            loading={"dtype": dtype, "device": device, "model_code": model_code, "model_factory": model_factory},
        )
        return
    if tasks is not None or steps is not None or data_dir is not None:
        from evaluator.harness.errors import HarnessOptionsError

        raise HarnessOptionsError("--tasks, --steps and --data-dir choose zero-shot tasks: add --harness lm-eval")
    from evaluator.session import evaluate_run

    options = Options(
        order=parse_order(order),
        all=all_,
        workers=workers,
        ray_address=address,
        limit=limit,
        batch_size=batch_size,
        allow_gaps=allow_gaps,
        fingerprint=fingerprint == "on",
        fingerprint_tolerance=fingerprint_tolerance,
        task=task,
        backend=backend,
        command=command,
        dtype=dtype,
        device=device,
        trust_remote_code=trust_remote_code,
        force=force,
        model_code=model_code,
        model_factory=model_factory,
        tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size,
        enable_expert_parallel=enable_expert_parallel,
        quantization=quantization,
    )
    summary = evaluate_run(run_dir, options, on_outcome=_print_outcome)
    # what decided: the spec's pass@k, or with --backend command the command's own accuracy
    compared = "the command's accuracy" if backend == "command" else summary.eval_cfg.metric
    _print_summary(summary, all_=all_, compared=compared)
    if summary.failures:
        steps = ", ".join(str(o.step) for o in summary.failures)
        raise EvaluationsFailed(
            f"{len(summary.failures)} evaluation(s) failed (steps {steps}); each is an "
            f"eval_failed event: see `recorder evals {run_dir}`"
        )
    if summary.passing_step is None and not summary.remaining:
        raise NothingPassedError(
            f"no evaluated checkpoint reached {compared} > {summary.eval_cfg.target}: no run_stop can claim success"
        )


def _harness_eval(
    run_dir: Path,
    *,
    tasks: str | None,
    steps: str | None,
    data_dir: Path | None,
    order: str,
    all_: bool,
    workers: int,
    ray: str | None,
    limit: int | None,
    batch_size: int,
    allow_gaps: bool,
    fingerprint: str,
    fingerprint_tolerance: float,
    force: bool,
    loading: dict[str, Any],
) -> None:
    from evaluator.errors import EvaluationsFailed
    from evaluator.harness.errors import HarnessOptionsError
    from evaluator.harness.taskset import DEFAULT_TASKS, parse_tasks
    from evaluator.harness.zero_shot import HarnessOptions, evaluate_harness
    from evaluator.order import parse_order
    from evaluator.settings import Options

    problems = []
    if order != "ascending" and steps is not None:
        problems.append("--order and --steps: give one of them")
    if all_:
        problems.append("--all: the harness scores every checkpoint asked for anyway (there is no target)")
    if problems:
        raise HarnessOptionsError("with --harness: " + "; ".join(problems))
    options = HarnessOptions(
        tasks=parse_tasks(tasks if tasks is not None else ",".join(DEFAULT_TASKS)),
        data_dir=data_dir,
        evaluation=Options(
            order=parse_order(steps if steps is not None else order),
            limit=limit,
            batch_size=batch_size,
            workers=workers,
            ray_address=ray,
            allow_gaps=allow_gaps,
            fingerprint=fingerprint == "on",
            fingerprint_tolerance=fingerprint_tolerance,
            force=force,
            **loading,
        ),
    )
    summary = evaluate_harness(run_dir, options, on_outcome=_print_harness_outcome)
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


def _print_harness_outcome(o: Any) -> None:
    if o.status == "failed":
        console.print(line(f"step {o.step}:", label("FAILED", "bold red"), f"{o.error}: {o.reason}"))
    elif o.status == "skipped":
        console.print(f"step {o.step}: {o.reason}", highlight=False)
    else:
        scores = "  ".join(f"{k} {v:.4f}" for k, v in o.scores.items())
        console.print(f"step {o.step}: {scores} (in {o.seconds:.1f} s -> {o.results})", highlight=False)


def _print_outcome(o: Outcome) -> None:
    if o.status == "failed":
        console.print(line(f"step {o.step}:", label("FAILED", "bold red"), f"{o.error}: {o.reason}"))
        return
    mark = label("pass", "green") if o.passed else "below target"
    where = f"({o.reason})" if o.status == "skipped" else f"in {o.seconds:.1f} s -> {o.results}"
    console.print(line(f"step {o.step}: accuracy {o.accuracy:.4f}", mark, where))


def _print_summary(s: Summary, *, all_: bool, compared: str) -> None:
    if s.unverified:
        console.print(
            line(
                label("UNVERIFIED:", "bold red"),
                f"evaluated with --force from a run that fails verify ({s.unverified[0]})",
            )
        )
    for p in s.problems:
        console.print(warning(f"{p} (--allow-gaps)"))
    for c in s.closed:
        console.print(f"closed an interrupted evaluation: {c}", highlight=False)
    if s.segment is None:
        why = (
            f"step {s.passing_step} already passed; --all evaluates the others"
            if s.passing_step is not None and not all_
            else "every checkpoint asked for was already scored"
        )
        console.print(f"nothing to evaluate: {why}", highlight=False)
    scored = sum(o.status == "scored" for o in s.outcomes)
    head = f"run {s.run_id}: {scored} evaluated"
    head += f" with {s.workers}, events in {s.segment}" if s.segment else ""
    if s.remaining:
        head += f"; not evaluated (--limit): steps {', '.join(map(str, s.remaining))}"
    console.print(head, highlight=False)
    if s.passing_step is not None:
        console.print(
            f"first passing checkpoint: step {s.passing_step} ({compared} > {s.eval_cfg.target})",
            highlight=False,
        )
    _print_not_comparable(s.eval_cfg.target)


def _print_not_comparable(target: float | None) -> None:
    why = not_comparable(target)
    if why is not None:
        console.print(
            line(
                label("NOT COMPARABLE:", "yellow"),
                f"{why}; eval, the history and replay judge passing by the run's own target, and the 6.1.0 "
                "checker by the ruleset's",
            )
        )


def _utc(time_ns: int | None) -> str:
    if time_ns is None:
        return ""
    return dt.datetime.fromtimestamp(time_ns / 1e9, dt.UTC).strftime("%H:%M:%S")


def evals(run_dir: Annotated[Path, typer.Argument(help="The run directory.")]) -> None:
    """Every evaluation of a run, from its events: step, outcome, score, timing, checkpoint hash."""
    from rich import box

    from evaluator.attempts import attempts
    from recorder.reader import read_run, recorded_run_id, run_id_from

    log = read_run(run_dir)
    opened = next((e for e in log.events if e.kind == "run_opened"), None)
    # the one target eval and replay judge by: the recorded one, else the ruleset's (an imported run records none)
    target = pass_target(recorded_target(opened.data if opened else None))
    rows = attempts(log.events)
    day = next(
        (dt.datetime.fromtimestamp(a.start.time_ns / 1e9, dt.UTC).strftime("%Y-%m-%d") for a in rows if a.start), ""
    )
    title = f"{run_id_from(log.events) or recorded_run_id(log.run)}: {len(rows)} evaluations" + (
        f", pass means > {target}" if target is not None else ""
    )
    table = Table(
        title=title + (f", started {day} UTC" if day else ""), box=box.SIMPLE, pad_edge=False, collapse_padding=True
    )
    for col in ("step", "segment", "started", "s", "status", "accuracy", "pass", "sha256"):
        table.add_column(col, no_wrap=True, min_width=len(col))
    table.add_column("derived/evals/ or reason", overflow="fold", min_width=20)
    for a in rows:
        table.add_row(*_evals_row(a, target))
    console.print(table)
    _print_not_comparable(target)
    zero_shot = _zero_shot_table(log.events)
    if zero_shot is not None:
        console.print(zero_shot)


def _zero_shot_table(events: list[Any]) -> Table | None:
    """The harness's task scores (writer "harness"), one row per step, one column per task; None if none."""
    from rich import box

    from evaluator.attempts import HARNESS_WRITER

    scores: dict[int, dict[str, str]] = {}
    failed: dict[int, str] = {}
    for e in events:
        if e.writer != HARNESS_WRITER or e.step is None:
            continue
        if e.kind == "eval_result" and isinstance(e.value, (int, float)):
            metric = EvalResult.from_event(e).metric or ""
            scores.setdefault(e.step, {})[str(e.key)] = f"{e.value:.4f} {metric}".strip()
        elif e.kind == "eval_failed":
            f = EvalFailed.from_event(e)
            failed[e.step] = f"{f.error}: {f.reason}"
    if not scores and not failed:
        return None
    tasks = list(dict.fromkeys(t for row in scores.values() for t in row))
    table = Table(
        title="zero-shot tasks (recorder eval --harness lm-eval; latest score per step and task)",
        box=box.SIMPLE,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("step", no_wrap=True)
    for t in tasks:
        table.add_column(t, no_wrap=True)
    table.add_column("failed", overflow="fold")
    for step in sorted(set(scores) | set(failed)):
        row = scores.get(step, {})
        table.add_row(str(step), *[row.get(t, "") for t in tasks], failed.get(step, "") if step not in scores else "")
    return table


def _evals_row(a: Attempt, target: float | None) -> list[str]:
    end = a.stop or a.failed or a.closed_by
    seconds = f"{(end.time_ns - a.start.time_ns) / 1e9:.1f}" if a.start and end else ""
    acc = a.accuracy
    passed = "" if acc is None or target is None else ("yes" if passes(acc, target) else "no")
    if a.result is not None:
        result = EvalResult.from_event(a.result)
        detail = (result.results or "").removeprefix("derived/evals/")
        if result.unverified is not None:  # evaluated with --force from a run that fails verify
            detail = f"UNVERIFIED ({result.unverified}) {detail}"
    elif a.failed is not None or a.closed_by is not None:
        ev = a.failed or a.closed_by
        assert ev is not None
        f = EvalFailed.from_event(ev)
        detail = f"{f.error}: {f.reason}"
    else:
        detail = "no end recorded (running, or killed)"
    sha = ((EvalStart.from_event(a.start).sha256 if a.start else None) or "")[:8]
    return [
        str(a.step if a.step is not None else ""),
        a.segment.removesuffix(".arrows"),
        _utc(a.start.time_ns if a.start else None),
        seconds,
        a.status,
        "" if acc is None else f"{acc:.4f}",
        passed,
        sha,
        detail,
    ]


def register(app: typer.Typer) -> None:
    app.command(name="eval")(eval_command)
    app.command()(evals)
