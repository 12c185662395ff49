"""`recorder zero-shot` and `recorder collect`. Imports typer and rich here; the evaluator loads lazily."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from recorder.cli._output import console
from recorder.cli._progress import PerItem
from recorder.cli._signing import SigningKeyOption, UntrustedOkOption, apply_key_options

Paths = Annotated[
    list[Path], typer.Argument(help="Checkpoints: run dirs, snapshots, archives, checkpoint dirs, recorder runs.")
]
Tasks = Annotated[str, typer.Option(help="lm-eval task names, comma-separated (siqa = social_iqa).")]
Limit = Annotated[int | None, typer.Option(help="At most N examples per task (a smoke test, not a score).")]
HfCache = Annotated[Path | None, typer.Option(help="Local Hugging Face datasets directory.")]
DataDir = Annotated[Path | None, typer.Option(help="Directory of <task>.jsonl exports.")]
Online = Annotated[bool, typer.Option(help="Let the datasets libraries reach the hub (offline by default).")]
LogSamples = Annotated[bool, typer.Option(help="Per-sample log-likelihoods in results.json.")]
Holdout = Annotated[
    Literal["on", "off", "record"],
    typer.Option(help="on: compare with the logged eval/loss; record: store it only; off: skip."),
]
MaxGap = Annotated[float, typer.Option(help="Largest |recomputed - logged| eval/loss allowed.")]
HoldoutData = Annotated[Path | None, typer.Option(help="The holdout file, when the config's path does not resolve.")]
WorldSize = Annotated[int | None, typer.Option(help="The training's world size (default: the checkpoint's).")]
ModelRoot = Annotated[Path | None, typer.Option(help="Root of the team's model code.")]
Factory = Annotated[str | None, typer.Option(help="pkg.module:function under --model-code.")]
Dtype = Annotated[Literal["fp32", "bf16"], typer.Option(help="Scoring precision.")]
Device = Annotated[str, typer.Option(help="cpu, cuda, or auto (each worker's accelerator if any).")]
BatchSize = Annotated[int, typer.Option(help="Requests per forward pass (scores do not depend on it).")]
Workers = Annotated[int | None, typer.Option(help="Ray actors, one checkpoint each (default: one per PATH).")]
RayAddress = Annotated[str | None, typer.Option(help="Ray cluster to join (default: a local one).")]
TaskSpec = Annotated[
    Path | None, typer.Option("--task", help="An imported recorder run: the task spec its fingerprints used.")
]
Out = Annotated[Path | None, typer.Option("-o", "--out", help="Write results under DIR instead.")]
ALL_TASKS = "arc_easy,arc_challenge,hellaswag,openbookqa,piqa,winogrande,social_iqa"


def zero_shot_command(
    paths: Paths,
    tasks: Tasks = ALL_TASKS,
    limit: Limit = None,
    hf_cache: HfCache = None,
    data_dir: DataDir = None,
    online: Online = False,
    log_samples: LogSamples = False,
    holdout: Holdout = "on",
    holdout_max_gap: MaxGap = 0.005,
    holdout_data: HoldoutData = None,
    train_world_size: WorldSize = None,
    model_code: ModelRoot = None,
    model_factory: Factory = None,
    dtype: Dtype = "fp32",
    device: Device = "auto",
    batch_size: BatchSize = 8,
    workers: Workers = None,
    ray_address: RayAddress = None,
    out: Out = None,
    task: TaskSpec = None,
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
    from evaluator.zero_shot.task_sources import parse_task_names

    apply_key_options(signing_key, untrusted_ok)
    options = ZeroShotOptions(
        tasks=tuple(parse_task_names(tasks)), limit=limit, hf_cache=hf_cache, data_dir=data_dir, online=online,
        log_samples=log_samples, holdout=holdout, max_gap=holdout_max_gap, holdout_data=holdout_data,
        train_world_size=train_world_size, code=ModelCode(root=model_code, factory=model_factory), dtype=dtype,
        device=device, batch_size=batch_size, workers=workers, ray_address=ray_address, out=out, task=task,
    )  # fmt: skip
    with PerItem("zero-shot") as shown:
        width = console.width if console.is_terminal else None
        summary = zero_shot(paths, options, echo=_echo, width=width, report=shown.report)
    for path in summary.written:
        console.print(f"wrote {path.parent}", highlight=False)
    if summary.failed:
        raise typer.Exit(1)


def collect_command(paths: Paths) -> None:
    """Print the table again from the newest zero-shot results of each PATH (checkpoint, run or -o DIR)."""
    from evaluator.zero_shot.collect import collect

    width = console.width if console.is_terminal else None
    console.print(collect(paths, width), highlight=False, end="")


def _echo(text: str) -> None:
    console.print(text, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command(name="zero-shot")(zero_shot_command)
    app.command(name="collect")(collect_command)
