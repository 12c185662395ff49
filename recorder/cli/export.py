"""`recorder export-hf`: a checkpoint (a NeMo-RL Megatron step, torch DCP, ...) as a Hugging Face directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from recorder.cli.shared.model_source import ModelConfigOption, TokenizerOption
from recorder.cli.terminal.output import console


def export_hf(
    checkpoint: Annotated[Path, typer.Argument(help="The checkpoint: a series' step_N/, a torch DCP directory, ...")],
    out: Annotated[Path, typer.Option("-o", "--out", help="The directory to write (new or empty).")],
    dtype: Annotated[
        Literal["fp32", "bf16", "fp16"],
        typer.Option(help="The dtype of the floating tensors written (fp32 keeps bf16 and fp32 weights exactly)."),
    ] = "fp32",
    model_config: ModelConfigOption = None,
    tokenizer: TokenizerOption = None,
) -> None:
    """Write a checkpoint as model.safetensors + config.json + tokenizer, through the mapping evaluation uses."""
    from recorder.checkpoints.detect import ModelSource
    from recorder.checkpoints.hugging_face.export_hf import export_hf as export

    done = export(checkpoint, out, dtype=dtype, source=ModelSource.of(model_config, tokenizer))
    console.print(f"exported {done.tensors} tensors (manifest root {done.manifest_root[:16]}...) to {done.directory}")


def register(app: typer.Typer) -> None:
    app.command("export-hf")(export_hf)
