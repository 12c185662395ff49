"""`recorder eval`. Imports only typer/rich here; the evaluator loads lazily."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from evaluator.cluster.ray_start import LOCAL  # Ray's address of a new local cluster (no Ray import)
from recorder.cli.evaluation.eval_options import (
    DataDirOption,
    DeviceOption,
    ModelCodeOption,
    ModelFactoryOption,
    RayAddressOption,
    TasksOption,
    TaskSpecOption,
    check_ray_paths,
)
from recorder.cli.evaluation.harness_eval import check_harness_options, harness_eval
from recorder.cli.shared.interrupt import eval_session_interrupted
from recorder.cli.shared.model_source import ModelConfigOption, TokenizerOption
from recorder.cli.shared.not_comparable import print_not_comparable
from recorder.cli.shared.signing_keys import SigningKeyOption, UntrustedOkOption, apply_key_options
from recorder.cli.terminal import panels
from recorder.cli.terminal.output import console, label, line, warning
from recorder.cli.terminal.progress import UntilFirst

if TYPE_CHECKING:
    from evaluator.session import StepOutcome, Summary
    from evaluator.settings import Options


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
_StepsOpt = Annotated[
    str | None,
    typer.Option(rich_help_panel=panels.WHICH, help="--harness: only these steps, S1,S2,... (default: all)."),
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
    ray_address: RayAddressOption = None,
    limit: _LimitOpt = None,
    batch_size: _BatchSizeOpt = 64,
    allow_gaps: _AllowGapsOpt = False,
    fingerprint: _FingerprintOpt = "on",
    fingerprint_tolerance: _FingerprintToleranceOpt = 0.005,
    harness: _HarnessOpt = None,
    tasks: TasksOption = None,
    steps: _StepsOpt = None,
    data_dir: DataDirOption = None,
    task: TaskSpecOption = None,
    backend: _BackendOpt = "torch",
    command: _CommandOpt = None,
    dtype: _DtypeOpt = None,
    device: DeviceOption = "cpu",
    model_code: ModelCodeOption = None,
    model_factory: ModelFactoryOption = None,
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
    check_harness_options(harness, task, backend, command, tasks, steps, data_dir)
    options = Options(
        order=parse_order(order),  # the harness reads --order or --steps itself
        all=all_,
        # As in `recorder train`: --ray is a flag, --ray-address a cluster. Ray's own "local" starts a new cluster.
        ray_address=ray_address or (LOCAL if ray else None),
        fingerprint=fingerprint == "on",
        **{name: given[name] for name in _AS_GIVEN},
    )
    if options.backend != "vllm":
        check_ray_paths(options.workers, options.ray_address)  # before the run is verified and torch loads
    if harness is not None:
        harness_eval(run_dir, options, order=order, tasks=tasks, steps=steps, data_dir=data_dir)
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
            raise eval_session_interrupted(e, evaluated) from None


def _waiting_for(options: Options) -> str:
    """What the first result waits for: in-process torch, or Ray actors that each load torch and the model
    (evaluator.cluster.workers.start_workers picks Ray for more than one worker or a cluster address)."""
    if options.backend == "vllm":
        return "eval: verifying the run, starting the vLLM engine"
    if options.workers > 1 or options.ray_address is not None:
        ray = "starting Ray" if options.ray_address in (None, LOCAL) else f"connecting to Ray at {options.ray_address}"
        return f"eval: verifying the run, {ray}, {options.workers} worker(s) each loading torch and the model"
    return "eval: verifying the run, loading torch and the model"


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
    print_not_comparable(why_not_judged(cfg.target, settings), cfg.target)


def register(app: typer.Typer) -> None:
    app.command(name="eval")(eval_command)
