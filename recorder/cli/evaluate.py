"""`recorder eval` and `recorder evals`. Imports only typer/rich here; the evaluator loads lazily."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from recorder.cli import _panels as panels
from recorder.cli._interrupt import CommandInterrupted, eval_interrupted
from recorder.cli._json import FormatOption, print_document
from recorder.cli._model_source import ModelConfigOption, TokenizerOption
from recorder.cli._output import console, label, line, warning
from recorder.cli._progress import UntilFirst
from recorder.cli._signing import SigningKeyOption, UntrustedOkOption, apply_key_options
from recorder.cli._tables import Col, print_fitted, set_wide
from recorder.rules import recorded_target

LOCAL_RAY = "local"

if TYPE_CHECKING:
    from rich.table import Table

    from evaluator.attempts import Attempt
    from evaluator.harness.run_session import HarnessOptions, HarnessSummary
    from evaluator.order import Order
    from evaluator.session import StepOutcome, Summary
    from evaluator.settings import Options
    from recorder.goals import Goal
    from recorder.run import RunDir


_RunDirOpt = Annotated[Path, typer.Argument(help="The run directory (training must have stopped).")]
_OrderOpt = Annotated[
    str, typer.Option(rich_help_panel=panels.WHICH, help="ascending | descending | S1,S2,... (only those steps).")
]
_AllOpt = Annotated[
    bool,
    typer.Option(
        "--all", rich_help_panel=panels.WHICH, help="Evaluate every checkpoint, not only up to the first pass."
    ),
]
_WorkersOpt = Annotated[
    int,
    typer.Option(
        rich_help_panel=panels.WORKERS,
        help="Evaluation workers; more than 1 runs Ray actors, each evaluating whole checkpoints in --order "
        "(one GPU each where the cluster has one per worker).",
    ),
]
_RayOpt = Annotated[
    bool,
    typer.Option(
        "--ray", rich_help_panel=panels.WORKERS, help="Workers as Ray actors (a local cluster), even with one worker."
    ),
]
_RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        rich_help_panel=panels.WORKERS,
        help="Use the running Ray cluster at this address (implies --ray).",
    ),
]
_LimitOpt = Annotated[
    int | None, typer.Option(rich_help_panel=panels.WHICH, help="Evaluate at most N checkpoints in this session.")
]
_BatchSizeOpt = Annotated[
    int,
    typer.Option(rich_help_panel=panels.WORKERS, help="Samples generated per batch (the score does not depend on it)."),
]
_AllowGapsOpt = Annotated[
    bool, typer.Option("--allow-gaps", rich_help_panel=panels.WHICH, help="Evaluate a series that misses checkpoints.")
]
_FingerprintOpt = Annotated[
    Literal["on", "off"], typer.Option(rich_help_panel=panels.CHECKS, help="Check each checkpoint's fingerprint.")
]
_FingerprintToleranceOpt = Annotated[
    float, typer.Option(rich_help_panel=panels.CHECKS, help="Largest |recomputed - recorded| fingerprint.")
]
_HarnessOpt = Annotated[
    Literal["lm-eval"] | None,
    typer.Option(
        rich_help_panel=panels.TASKS,
        help="Score zero-shot tasks with lm-evaluation-harness instead of the benchmark's pass@k.",
    ),
]
_TasksOpt = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=panels.TASKS,
        help="--harness: comma-separated tasks (default: arc_easy, arc_challenge, hellaswag, openbookqa, piqa, "
        "winogrande, siqa).",
    ),
]
_StepsOpt = Annotated[
    str | None,
    typer.Option(rich_help_panel=panels.WHICH, help="--harness: only these steps, S1,S2,... (default: all)."),
]
_DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=panels.TASKS, help="--harness: directory of <task>.jsonl files (default: $RECORDER_EVAL_DATA)."
    ),
]
_TaskOpt = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=panels.TASKS,
        help="A task spec (TOML). An imported run: its task and settings. A run of `recorder train`: where the "
        "spec it recorded lies now (another is refused).",
    ),
]
_BackendOpt = Annotated[
    Literal["torch", "vllm", "command"],
    typer.Option(rich_help_panel=panels.BACKEND, help="torch (ours), vllm, or command (--command)."),
]
_CommandOpt = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=panels.BACKEND,
        help='--backend command: your evaluation, e.g. "python ev.py --ckpt {checkpoint} --out {out}".',
    ),
]
_DtypeOpt = Annotated[
    Literal["fp32", "bf16", "fp16"] | None,
    typer.Option(
        rich_help_panel=panels.MODEL,
        help="The weights' dtype (default: the dtype the run rolled out in, the rule's precision; another "
        "one is recorded as not the rule's).",
    ),
]
_DeviceOpt = Annotated[
    str, typer.Option(rich_help_panel=panels.MODEL, help="Where the model runs: cpu, cuda, cuda:1, ...")
]
_ModelCodeOpt = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=panels.MODEL, help="The root of your model's code (with --model-factory): imported from there."
    ),
]
_ModelFactoryOpt = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=panels.MODEL,
        help="package.module:function under --model-code: called with the checkpoint's config.",
    ),
]
_TensorParallelOpt = Annotated[
    int, typer.Option(rich_help_panel=panels.VLLM, help="--backend vllm: GPUs per model replica.")
]
_PipelineParallelOpt = Annotated[
    int, typer.Option(rich_help_panel=panels.VLLM, help="--backend vllm: pipeline stages.")
]
_ExpertParallelOpt = Annotated[
    bool,
    typer.Option(
        "--enable-expert-parallel",
        rich_help_panel=panels.VLLM,
        help="--backend vllm: spread MoE experts over the GPUs.",
    ),
]
_QuantizationOpt = Annotated[
    str | None,
    typer.Option(rich_help_panel=panels.VLLM, help="--backend vllm: the rollout's quantization (fp8, awq, ...)."),
]
_TrustRemoteCodeOpt = Annotated[
    bool,
    typer.Option(
        "--trust-remote-code", rich_help_panel=panels.MODEL, help="Run model code shipped in the checkpoint directory."
    ),
]
_ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        rich_help_panel=panels.CHECKS,
        help="Evaluate a run that fails verify; its results are marked UNVERIFIED.",
    ),
]
# The options that Options takes as they are given, under the same names.
_AS_GIVEN = (
    "workers",
    "limit",
    "batch_size",
    "allow_gaps",
    "fingerprint_tolerance",
    "task",
    "backend",
    "command",
    "dtype",
    "device",
    "trust_remote_code",
    "force",
    "model_code",
    "model_factory",
    "model_config",
    "tokenizer",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "enable_expert_parallel",
    "quantization",
)


def eval_command(
    run_dir: _RunDirOpt,
    order: _OrderOpt = "ascending",
    all_: _AllOpt = False,
    workers: _WorkersOpt = 1,
    ray: _RayOpt = False,
    ray_address: _RayAddressOpt = None,
    limit: _LimitOpt = None,
    batch_size: _BatchSizeOpt = 64,
    allow_gaps: _AllowGapsOpt = False,
    fingerprint: _FingerprintOpt = "on",
    fingerprint_tolerance: _FingerprintToleranceOpt = 0.005,
    harness: _HarnessOpt = None,
    tasks: _TasksOpt = None,
    steps: _StepsOpt = None,
    data_dir: _DataDirOpt = None,
    task: _TaskOpt = None,
    backend: _BackendOpt = "torch",
    command: _CommandOpt = None,
    dtype: _DtypeOpt = None,
    device: _DeviceOpt = "cpu",
    model_code: _ModelCodeOpt = None,
    model_factory: _ModelFactoryOpt = None,
    model_config: ModelConfigOption = None,
    tokenizer: TokenizerOption = None,
    tensor_parallel_size: _TensorParallelOpt = 1,
    pipeline_parallel_size: _PipelineParallelOpt = 1,
    enable_expert_parallel: _ExpertParallelOpt = False,
    quantization: _QuantizationOpt = None,
    trust_remote_code: _TrustRemoteCodeOpt = False,
    force: _ForceOpt = False,
    signing_key: SigningKeyOption = None,
    untrusted_ok: UntrustedOkOption = False,
) -> None:
    """Evaluate a run's checkpoints offline (6.1 rule): integrity checks, pass@k, eval events, results.json.

    Exit 0 when a checkpoint passed, 1 when none did or an evaluation failed, 2 for bad input.
    With --harness lm-eval: zero-shot task scores per checkpoint (exit 0 unless an evaluation failed).
    """
    given = dict(locals())  # the options, before any other name is bound here
    from evaluator.order import parse_order
    from evaluator.settings import Options

    apply_key_options(signing_key, untrusted_ok)
    _check_harness_options(harness, task, backend, command, tasks, steps, data_dir)
    options = Options(
        order=parse_order(order),  # the harness reads --order or --steps itself
        all=all_,
        # As in `recorder train`: --ray is a flag, --ray-address a cluster. Ray's own "local" starts a new cluster.
        ray_address=ray_address or (LOCAL_RAY if ray else None),
        fingerprint=fingerprint == "on",
        **{name: given[name] for name in _AS_GIVEN},
    )
    if harness is not None:
        _harness_eval(run_dir, options, order=order, tasks=tasks, steps=steps, data_dir=data_dir)
        return
    _finish(_evaluate(run_dir, options), run_dir, options)


def _evaluate(run_dir: Path, options: Options) -> Summary:
    """The session, each outcome printed as it comes; on a terminal a line says what it waits for until the
    first one (verify, torch and the model load first)."""
    from evaluator.session import evaluate_run

    evaluated = 0
    with UntilFirst(_waiting_for(options)) as waiting:

        def on_outcome(o: StepOutcome) -> None:
            nonlocal evaluated
            evaluated += o.status != "skipped"
            waiting.done()
            _print_outcome(o)

        try:
            return evaluate_run(run_dir, options, on_outcome=on_outcome)
        except KeyboardInterrupt as e:
            raise _interrupted(e, evaluated) from None


def _interrupted(e: KeyboardInterrupt, evaluated: int) -> CommandInterrupted:
    """Ctrl-C in an eval session, said from what it did: the steps it recorded as interrupted on its way out
    (evaluator.errors.EvaluationsInterrupted), else whether it had evaluated any."""
    from evaluator.errors import EvaluationsInterrupted

    closed = e.steps if isinstance(e, EvaluationsInterrupted) else []
    return CommandInterrupted(eval_interrupted(closed, evaluated))


def _waiting_for(options: Options) -> str:
    """What the first result waits for: in-process torch, or Ray actors that each load torch and the model
    (evaluator.workers.start_workers picks Ray for more than one worker or a cluster address)."""
    if options.backend == "vllm":
        return "eval: verifying the run, starting the vLLM engine"
    if options.workers > 1 or options.ray_address is not None:
        ray = (
            "starting Ray"
            if options.ray_address in (None, LOCAL_RAY)
            else f"connecting to Ray at {options.ray_address}"
        )
        return f"eval: verifying the run, {ray}, {options.workers} worker(s) each loading torch and the model"
    return "eval: verifying the run, loading torch and the model"


def _check_harness_options(
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


def _finish(summary: Summary, run_dir: Path, options: Options) -> None:
    """What the session decided, and the exit it calls for."""
    from evaluator.errors import EvaluationsFailed, NothingPassedError

    # what decided: the spec's pass@k, or with --backend command the command's own accuracy
    compared = "the command's accuracy" if options.backend == "command" else summary.eval_cfg.metric
    _print_summary(summary, all_=options.all, compared=compared)
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


def _order_from(text: str, option: str) -> Order:
    """`text` parsed as --order is, an error naming `option`, the one the user gave."""
    from evaluator.errors import OrderError
    from evaluator.order import parse_order

    try:
        return parse_order(text)
    except OrderError as e:
        raise OrderError(str(e).replace("--order", option, 1)) from None


def _harness_eval(
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
        raise _interrupted(e, evaluated) from None


def _print_harness_outcome(o: Any) -> None:
    if o.status == "failed":
        console.print(line(f"step {o.step}:", label("FAILED", "bold red"), f"{o.error}: {o.reason}"))
    elif o.status == "skipped":
        console.print(f"step {o.step}: {o.reason}", highlight=False)
    else:
        scores = "  ".join(f"{k} {v:.4f}" for k, v in o.scores.items())
        console.print(f"step {o.step}: {scores} (in {o.seconds:.1f} s -> {o.results})", highlight=False)


def _print_outcome(o: StepOutcome) -> None:
    if o.status == "failed":
        console.print(line(f"step {o.step}:", label("FAILED", "bold red"), f"{o.error}: {o.reason}"))
        return
    mark = label("pass", "green") if o.passed else "below target"
    where = f"({o.reason})" if o.status == "skipped" else f"in {o.seconds:.1f} s -> {o.results}"
    console.print(line(f"step {o.step}: accuracy {o.accuracy:.4f}", mark, where))


def _print_summary(s: Summary, *, all_: bool, compared: str) -> None:
    from recorder.comparability import why_not_judged

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
    if s.engine_log is not None:
        console.print(f"vLLM's own output: {s.engine_log}", highlight=False)
    if s.passing_step is not None:
        console.print(
            f"first passing checkpoint: step {s.passing_step} ({compared} > {s.eval_cfg.target})",
            highlight=False,
        )
    cfg = s.eval_cfg
    settings = {"k": cfg.k, "samples": cfg.samples, "temperature": cfg.temperature, "top_p": cfg.top_p}
    _print_not_comparable(why_not_judged(cfg.target, settings), cfg.target)


def _print_not_comparable(why: str | None, target: float | None) -> None:
    """The NOT COMPARABLE line (recorder.comparability's why), saying what judges passing."""
    from recorder.comparability import NOT_COMPARABLE, with_what_judges

    if why is None:
        return
    console.print(line(label(f"{NOT_COMPARABLE}:", "yellow"), with_what_judges(why, target, "6.1.0")))


def _iso(time_ns: int | None) -> str | None:
    """ISO 8601 with the date and the zone, for JSON (the table shows the time of day under a dated title)."""
    if time_ns is None:
        return None
    return dt.datetime.fromtimestamp(time_ns / 1e9, dt.UTC).isoformat(timespec="milliseconds")


def _utc(time_ns: int | None) -> str:
    if time_ns is None:
        return ""
    return dt.datetime.fromtimestamp(time_ns / 1e9, dt.UTC).strftime("%H:%M:%S")


# `recorder evals`' columns; on a narrow terminal those with the highest rank are left out first (tables.py)
EVALS_COLUMNS = (
    Col("step", "right", whole=True),
    Col("segment", drop=4),
    Col("started", drop=3),
    Col("s", "right", drop=2),
    Col("status"),
    Col("accuracy", "right"),
    Col("pass"),
    Col("sha256", drop=5),
    Col("derived/evals/ or reason", drop=1),
)


def evals(
    run_dir: Annotated[Path, typer.Argument(help="The run directory.")],
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however narrow the terminal.")] = False,
    fmt: FormatOption = "table",
) -> None:
    """Every evaluation of a run, from its events: step, outcome, score, timing, checkpoint hash."""
    set_wide(wide)
    from rich import box

    from recorder.reader import read_run, recorded_run_id, run_id_from

    log = read_run(run_dir)
    seen = _evaluations(log.events, log.run)
    run_id = run_id_from(log.events) or recorded_run_id(log.run)
    if fmt == "json":
        _evals_json(run_id, seen)
        return
    title = f"{run_id}: {len(seen.rows)} evaluations" + (f", pass means {seen.goal}" if seen.goal is not None else "")
    print_fitted(
        console,
        EVALS_COLUMNS,
        seen.rows,
        title + (f", started {seen.day} UTC" if seen.day else ""),
        box=box.SIMPLE,
        pad_edge=False,
        collapse_padding=True,
    )
    # an import's own target is its benchmark's
    _print_not_comparable(seen.why_not, seen.target)
    if seen.not_rechecked:
        console.print(seen.not_rechecked, highlight=False, markup=False, soft_wrap=True)
    zero_shot = _zero_shot_table(log.events)
    if zero_shot is not None:
        console.print(zero_shot)


@dataclass(frozen=True)
class _Evaluations:
    """A run's evaluations as `evals` shows them: one row per attempt (EVALS_COLUMNS), its accuracies whole."""

    rows: list[list[str]]
    accuracies: list[float | None]
    goal: Goal | None
    day: str
    why_not: str | None
    target: float | None
    not_rechecked: str = ""  # a note naming the steps whose checkpoints were not rehashed (past the budget)
    started_ns: list[int | None] = field(default_factory=list)  # each row's start, for JSON


def _evaluations(events: list[Any], run: RunDir) -> _Evaluations:
    from evaluator.attempts import attempts
    from recorder.comparability import config_eval, evaluated_otherwise, scored_with, why_not_comparable
    from recorder.goals import opened_goal
    from recorder.kinds import EvalResult, RunOpened

    opened = next((e for e in events if e.kind == "run_opened"), None)
    # the one target eval and replay judge by: the recorded one, else the benchmark's own (recorder.goals)
    run_opened = RunOpened.from_event(opened) if opened else None
    goal = opened_goal(run_opened)
    tried = attempts(events)
    scored = [scored_with(EvalResult.from_event(a.result)) for a in tried if a.result is not None]
    # judged by its own target, a result still passes or fails it; evaluated otherwise, it does neither
    benchmark_evaluation = not evaluated_otherwise(config_eval(run_opened), scored)
    day = next(
        (dt.datetime.fromtimestamp(a.start.time_ns / 1e9, dt.UTC).strftime("%Y-%m-%d") for a in tried if a.start), ""
    )
    from recorder.verify.scored_commits import REHASH_BYTES, recheck

    # a score is its checkpoint's only while the checkpoint holds the committed bytes (recorder verify's rules)
    rechecked = recheck(run, events, {a.step for a in tried if a.result is not None and a.step is not None})
    skipped = ", ".join(map(str, rechecked.not_rechecked))
    return _Evaluations(
        rows=[_evals_row(a, goal, benchmark_evaluation, rechecked.changed.get(a.step or -1)) for a in tried],
        accuracies=[a.accuracy for a in tried],
        started_ns=[a.start.time_ns if a.start else None for a in tried],
        goal=goal,
        day=day,
        why_not=why_not_comparable(run_opened, scored),
        target=recorded_target(run_opened),
        not_rechecked=f"note: the checkpoints of step(s) {skipped} were not rehashed (past "
        f"{REHASH_BYTES // 1024**3} GiB a command): `recorder verify` checks them"
        if skipped
        else "",
    )


def _evals_json(run_id: str, seen: _Evaluations) -> None:
    """`evals --format json`: the document docs/cli.md describes (numbers as numbers, accuracies whole)."""
    names = ["step", "segment", "started", "seconds", "status", "accuracy", "pass", "sha256", "detail"]
    rows = []
    for cells, accuracy, started in zip(seen.rows, seen.accuracies, seen.started_ns, strict=True):
        row: dict[str, Any] = dict(zip(names, cells, strict=True))
        row.update(
            step=int(row["step"]) if row["step"] else None,
            started=_iso(started),
            seconds=float(row["seconds"]) if row["seconds"] else None,
            accuracy=accuracy,
            **{"pass": {"yes": True, "no": False}.get(row["pass"]), "verdict": row["pass"] or None},
        )
        rows.append(row)
    print_document(
        {
            "run_id": run_id,
            "pass_means": None if seen.goal is None else str(seen.goal),
            "not_comparable": seen.why_not,
            "evaluations": rows,
        }
    )


def _zero_shot_table(events: list[Any]) -> Table | None:
    """The harness's task scores (writer "harness"), one row per step, one column per task; None if none."""
    from rich import box

    from evaluator.attempts import HARNESS_WRITER
    from recorder.kinds import EvalFailed, EvalResult

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
    from rich.table import Table

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


def _evals_row(a: Attempt, goal: Goal | None, comparable: bool, changed: str | None = None) -> list[str]:
    """One evaluation; `comparable`: the run was evaluated as the benchmark is (recorder.comparability; else
    its pass column says NOT COMPARABLE rather than yes or no); `changed`: why its checkpoint no longer holds
    the committed bytes (its score is then not shown as that checkpoint's)."""
    from recorder.comparability import NOT_COMPARABLE
    from recorder.kinds import EvalFailed, EvalResult, EvalStart

    end = a.stop or a.failed or a.closed_by
    seconds = f"{(end.time_ns - a.start.time_ns) / 1e9:.1f}" if a.start and end else ""
    acc = a.accuracy
    passed = "" if acc is None or goal is None else ("yes" if goal.passes(acc) else "no")
    if a.result is not None:
        result = EvalResult.from_event(a.result)
        if passed and not comparable:
            passed = NOT_COMPARABLE
        detail = (result.results or "").removeprefix("derived/evals/")
        if result.unverified is not None:  # evaluated with --force from a run that fails verify
            detail = f"UNVERIFIED ({result.unverified}) {detail}"
        if changed is not None:  # no verdict on weights that are no longer there
            passed, detail = "", f"CHECKPOINT CHANGED SINCE SCORED ({changed}) {detail}"
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
