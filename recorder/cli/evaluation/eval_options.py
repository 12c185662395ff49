"""The options `eval` and `zero-shot` both take, declared once: each option's type, help section and help.

Two commands that take an option under one name mean one thing by it (tests/layout/test_option_panels.py
holds them to these declarations). Where zero-shot also reads an option from the variable a pretraining
team's job scripts set (docs/zero-shot.md), the variable is named on its own type here (`...FromEnvOption`),
built from the same declaration: `eval` reads its options only as they are typed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from recorder.cli.terminal import panels


def _model_code(envvar: str | None = None) -> Any:
    return typer.Option(
        rich_help_panel=panels.MODEL,
        help="The root of your model's code (with --model-factory): imported from there. zero-shot's default "
        "with --model-factory: the working directory, the team's repository root.",
        envvar=envvar,
    )


def _model_factory(envvar: str | None = None) -> Any:
    return typer.Option(
        rich_help_panel=panels.MODEL,
        help="package.module:function under --model-code: called with the checkpoint's config.",
        envvar=envvar,
    )


def _tasks(envvar: str | None = None) -> Any:
    return typer.Option(
        rich_help_panel=panels.TASKS,
        help="lm-eval task names, comma-separated (siqa = social_iqa; default: arc_easy, arc_challenge, "
        "hellaswag, openbookqa, piqa, winogrande, social_iqa). eval: with --harness.",
        envvar=envvar,
    )


ModelCodeOption = Annotated[Path | None, _model_code()]
ModelCodeFromEnvOption = Annotated[Path | None, _model_code("MODEL_CODE_ROOT")]
ModelFactoryOption = Annotated[str | None, _model_factory()]
ModelFactoryFromEnvOption = Annotated[str | None, _model_factory("EVAL_MODEL_FACTORY")]
TasksOption = Annotated[str | None, _tasks()]
TasksFromEnvOption = Annotated[str, _tasks("LMEVAL_TASKS")]
DeviceOption = Annotated[
    str,
    typer.Option(
        rich_help_panel=panels.MODEL,
        help="Where the model runs: cpu, cuda, cuda:1, ...; zero-shot also takes auto (each worker's accelerator "
        "if any).",
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        rich_help_panel=panels.WORKERS,
        help="Use the running Ray cluster at this address (eval: implies --ray; default: a local cluster).",
    ),
]
DataDirOption = Annotated[
    Path | None,
    typer.Option(
        rich_help_panel=panels.TASKS,
        help="Directory of <task>.jsonl files (eval: with --harness; its default: $RECORDER_EVAL_DATA).",
    ),
]
TaskSpecOption = Annotated[
    Path | None,
    typer.Option(
        "--task",
        rich_help_panel=panels.TASKS,
        help="A task spec (TOML). An imported run: its task and settings, the spec its fingerprints used. A run "
        "of `recorder train` (eval): where the spec it recorded lies now (another is refused).",
    ),
]


def check_ray_paths(workers: int | None, address: str | None) -> None:
    """Before anything is loaded: a local Ray cluster that more than one worker (or Ray's "local") would start
    and whose paths show it cannot start is one `error:` line now (evaluator.cluster.ray_start)."""
    from evaluator.cluster.ray_start import LOCAL, check_local_start  # no Ray import: paths only

    if (workers or 1) > 1 or address == LOCAL:
        check_local_start(address)
