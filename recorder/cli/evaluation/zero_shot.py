"""`recorder zero-shot` and `recorder collect`. Imports typer and rich here; the evaluator loads lazily."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from recorder.cli.evaluation.eval_options import (
    DataDirOption,
    DeviceOption,
    ModelCodeFromEnvOption,
    ModelFactoryFromEnvOption,
    RayAddressOption,
    TasksFromEnvOption,
    TaskSpecOption,
    check_ray_paths,
)
from recorder.cli.shared.model_source import TokenizerFromEnvOption
from recorder.cli.shared.paths import check_output_dir
from recorder.cli.shared.signing_keys import SigningKeyOption, UntrustedOkOption, apply_key_options
from recorder.cli.terminal import panels
from recorder.cli.terminal.output import at_spaces, console
from recorder.cli.terminal.progress import PerItem

Paths = Annotated[
    list[Path],
    typer.Argument(
        help="Checkpoints: run dirs, snapshots, archives, checkpoint dirs, recorder runs.", envvar="CKPT_PATH"
    ),
]
Limit = Annotated[
    int | None,
    typer.Option(
        rich_help_panel=panels.TASKS,
        help="At most N examples per task (a smoke test, not a score).",
        envvar="LMEVAL_LIMIT",
    ),
]
TaskSources = Annotated[
    str,
    typer.Option(
        rich_help_panel=panels.TASKS,
        help="TASK=PATH[:CONFIG],...: a task's Hugging Face dataset instead of the default "
        "(winogrande: allenai/winogrande:winogrande_debiased, social_iqa: jet-ai/social_i_qa).",
        envvar="EVAL_TASK_SOURCES",
    ),
]
HfCache = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=panels.TASKS,
        help="Local Hugging Face datasets directory (default: eval/hf_cache of the model code, if there).",
        envvar="EVAL_HF_ROOT",
    ),
]
Offline = Annotated[
    bool,
    typer.Option(
        "--offline/--online",
        rich_help_panel=panels.TASKS,
        help="Keep the datasets libraries off the network (--online lets them reach the hub).",
        envvar="EVAL_OFFLINE",
    ),
]
LogSamples = Annotated[
    bool,
    typer.Option(
        rich_help_panel=panels.TASKS,
        help="Per-sample log-likelihoods: samples_<task>.jsonl.",
        envvar="LMEVAL_LOG_SAMPLES",
    ),
]
Holdout = Annotated[
    str,
    typer.Option(
        rich_help_panel=panels.HOLDOUT,
        help="on (1): compare with the logged eval/loss; record: store it only; off (0): skip.",
        envvar="EVAL_HOLDOUT_CHECK",
    ),
]
MaxGap = Annotated[
    float,
    typer.Option(
        rich_help_panel=panels.HOLDOUT,
        help="Largest |recomputed - logged| eval/loss allowed (0 to 0.1).",
        envvar="EVAL_HOLDOUT_MAX_GAP",
    ),
]
HoldoutData = Annotated[
    Path | None,
    typer.Option(rich_help_panel=panels.HOLDOUT, help="The holdout file, when the config's path does not resolve."),
]
WorldSize = Annotated[
    int | None,
    typer.Option(
        rich_help_panel=panels.HOLDOUT,
        help="The training's world size (default: the checkpoint's).",
        envvar="EVAL_HOLDOUT_TRAIN_WORLD",
    ),
]
HoldoutFn = Annotated[
    str | None,
    typer.Option(
        rich_help_panel=panels.HOLDOUT,
        help="The team's eval/loss function, pkg.module:function under --model-code (default: built in).",
    ),
]
Epoch = Annotated[
    int | None,
    typer.Option(
        rich_help_panel=panels.WHICH, help="A run's fsdp2_epoch_N (default: the largest).", envvar="CKPT_EPOCH"
    ),
]
ConfigDir = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=panels.MODEL,
        help="Directory with all_config.yaml and train_metadata.yaml.",
        envvar="CKPT_CONFIG_DIR",
    ),
]
SkipCapacity = Annotated[
    bool,
    typer.Option(
        "--moe-skip-capacity/--moe-capacity",
        rich_help_panel=panels.MODEL,
        help="MoE capacity off while scoring.",
        envvar="MOE_SKIP_CAPACITY",
    ),
]
Dtype = Annotated[
    Literal["fp32", "bf16"],
    typer.Option(rich_help_panel=panels.MODEL, help="Scoring precision.", envvar="EVAL_PARAM_DTYPE"),
]
BatchSize = Annotated[
    int,
    typer.Option(
        rich_help_panel=panels.WORKERS,
        help="Requests per forward pass (scores do not depend on it).",
        envvar="EVAL_BATCH_SIZE_MCQ",
    ),
]
Nproc = Annotated[
    int | None,
    typer.Option(
        "--nproc",
        rich_help_panel=panels.WORKERS,
        help="Processes (devices) one checkpoint's requests are split across (default: the GPUs its worker sees "
        "when scoring on CUDA, else 1).",
        envvar="NPROC_PER_NODE",
    ),
]
Workers = Annotated[
    int | None,
    typer.Option(
        rich_help_panel=panels.WORKERS,
        help="Ray actors, one checkpoint each (default: one per PATH; at most one per CPU of the cluster).",
    ),
]
Out = Annotated[
    Path | None,
    typer.Option(
        "-o", "--out", rich_help_panel=panels.OUTPUT, help="Write results under DIR instead.", envvar="EVAL_OUTPUT_DIR"
    ),
]
HOLDOUT_MODES = {"on": "on", "1": "on", "off": "off", "0": "off", "record": "record"}
TEAM_HF_CACHE = Path("eval/hf_cache")  # where a team's eval scripts keep the datasets, under its repository
ALL_TASKS = "arc_easy,arc_challenge,hellaswag,openbookqa,piqa,winogrande,social_iqa"


def zero_shot_command(
    paths: Paths,
    tasks: TasksFromEnvOption = ALL_TASKS,
    limit: Limit = None,
    task_source: TaskSources = "",
    hf_cache: HfCache = None,
    data_dir: DataDirOption = None,
    offline: Offline = True,
    log_samples: LogSamples = False,
    holdout: Holdout = "on",
    holdout_max_gap: MaxGap = 0.005,
    holdout_data: HoldoutData = None,
    train_world_size: WorldSize = None,
    model_code: ModelCodeFromEnvOption = None,
    model_factory: ModelFactoryFromEnvOption = None,
    holdout_fn: HoldoutFn = None,
    epoch: Epoch = None,
    config_dir: ConfigDir = None,
    tokenizer: TokenizerFromEnvOption = None,
    moe_skip_capacity: SkipCapacity = True,
    dtype: Dtype = "fp32",
    device: DeviceOption = "auto",
    batch_size: BatchSize = 32,
    nproc: Nproc = None,
    workers: Workers = None,
    ray_address: RayAddressOption = None,
    out: Out = None,
    task: TaskSpecOption = None,
    signing_key: SigningKeyOption = None,
    untrusted_ok: UntrustedOkOption = False,
) -> None:
    """Zero-shot lm-eval scores of checkpoints, after a holdout check against the logged eval/loss.

    Exit 0 when every checkpoint was scored, 1 when one failed its holdout check or could not be loaded.
    A recorder run is verified first (its trust too) and its eval events signed as `recorder eval` signs them.
    """
    from evaluator.zero_shot.loading import ModelCode
    from evaluator.zero_shot.options import ZeroShotOptions
    from evaluator.zero_shot.runner import zero_shot
    from evaluator.zero_shot.task_sources import parse_sources, parse_task_names

    check_output_dir(out)
    apply_key_options(signing_key, untrusted_ok)
    check_ray_paths(workers, ray_address)  # before any checkpoint, task or model is read
    mode = _holdout_mode(holdout)
    root, hf_cache = _team_defaults(model_code, model_factory, hf_cache, data_dir)
    code = ModelCode(root=root, factory=model_factory, holdout_fn=holdout_fn)
    options = ZeroShotOptions(
        tasks=tuple(parse_task_names(tasks)), limit=limit, hf_cache=hf_cache, data_dir=data_dir, online=not offline,
        log_samples=log_samples, holdout=mode, max_gap=holdout_max_gap, holdout_data=holdout_data,  # type: ignore[arg-type]
        train_world_size=train_world_size, code=code, dtype=dtype, device=device, batch_size=batch_size,
        workers=workers, ray_address=ray_address, out=out, task=task, epoch=epoch, config_dir=config_dir,
        tokenizer=tokenizer, skip_capacity=moe_skip_capacity, sources=parse_sources(task_source), processes=nproc,
    )  # fmt: skip
    with PerItem("zero-shot") as shown:
        width = console.width if console.is_terminal else None
        summary = zero_shot(paths, options, echo=_echo, width=width, report=shown.report)
    _say_written(summary.written)
    if summary.failed:
        raise typer.Exit(1)


def _say_written(files: list[Path]) -> None:
    """`wrote DIR` for each result: the directory whole, on a line of its own where it does not fit beside
    the word (a path with spaces is never broken at them)."""
    for path in files:
        where = str(path.parent)
        console.print(at_spaces(f"wrote {where}", console, whole=[where]), highlight=False, soft_wrap=True)


def _team_defaults(
    root: Path | None, factory: str | None, hf_cache: Path | None, data_dir: Path | None
) -> tuple[Path | None, Path | None]:
    """(--model-code, --hf-cache) as a team's job runs: with a factory, or a working directory whose
    pyproject.toml declares [tool.recorder], the code is the working directory (its repository root); with no
    data source given, the datasets are the eval/hf_cache its eval scripts keep under it, when it is there."""
    from evaluator.zero_shot.origin.declaration import read_declaration

    if root is None and (factory is not None or read_declaration(Path.cwd()).file is not None):
        root = Path.cwd()
    if hf_cache is not None or data_dir is not None:
        return root, hf_cache
    found = (root or Path.cwd()) / TEAM_HF_CACHE
    return root, found if found.is_dir() else None


def _holdout_mode(value: str) -> str:
    """--holdout / EVAL_HOLDOUT_CHECK as the options take it: on, off or record (1 and 0 are the seed's)."""
    mode = HOLDOUT_MODES.get(value.strip().lower())
    if mode is None:
        raise typer.BadParameter(f"{value!r}: one of on (1), off (0), record", param_hint="--holdout")
    return mode


def collect_command(paths: Paths, trust: TrustOption = None, all_results: AllOption = False) -> None:
    """Print the table again from the zero-shot results under each PATH (checkpoint, run or -o DIR) that
    verify: bound to the checkpoint it scored, unedited, and signed by a --trust key when keys are given. The
    newest of each checkpoint, smoke tests (--limit) left out; --all shows every one, marked. Each result
    passed over is named on a line of its own, with why; exit 1 when none is shown."""
    from evaluator.zero_shot.reporting.collect import collect
    from recorder.signing import load_trusted
    from recorder.verify.trust import trusted_from_environment

    trusted = load_trusted(trust) if trust else trusted_from_environment()
    width = console.width if console.is_terminal else None
    found = collect(paths, width, trusted, everything=all_results)
    console.print(at_spaces(found.table, console), highlight=False, markup=False, soft_wrap=True, end="")
    for line in [*found.skipped, *found.notes, *([found.left_out] if found.left_out else [])]:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if not found.table:
        console.print("collect: no result verifies" if not found.left_out else "collect: no result shown",
                      highlight=False)  # fmt: skip
        raise typer.Exit(1)


TrustOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--trust",
        help="A public key (KEY.pub) whose signed results to show; only results it signed are shown. "
        "Repeatable. Default: the keys $RECORDER_TRUST names, if set.",
    ),
]

AllOption = Annotated[
    bool, typer.Option("--all", help="Every result that verifies, older ones and smoke tests (--limit) too, marked.")
]


def _echo(text: str) -> None:
    """A line of the evaluator's: it starts with the name of what it is about (`LABEL: ...`, a checkpoint's
    label, which may hold spaces): the line breaks at spaces after it, never inside it."""
    lead = text.split(": ", 1)[0] if ": " in text.split("\n", 1)[0] else ""
    console.print(at_spaces(text, console, whole=[lead] if lead else []), highlight=False, markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command(name="zero-shot")(zero_shot_command)
    app.command(name="collect")(collect_command)
