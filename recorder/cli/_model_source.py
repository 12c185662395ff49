"""`--model-config DIR` and `--tokenizer DIR`, which `import-checkpoints`, `eval` and `export-hf` take."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recorder.cli import _panels as panels

# A NeMo-RL Megatron series holds neither the Hugging Face config nor the tokenizer: its base model's.
ModelConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--model-config",
        rich_help_panel=panels.MODEL,
        help="The base model's directory with its config.json, for Megatron-Core weights that come without one "
        "(default: config.yaml's policy.model_name, a local directory or in the Hugging Face cache).",
    ),
]
TokenizerOption = Annotated[
    Path | None,
    typer.Option(
        "--tokenizer",
        rich_help_panel=panels.MODEL,
        help="The tokenizer's directory, for checkpoints that come without one (default: config.yaml's "
        "policy.tokenizer.name, a local directory or in the Hugging Face cache).",
    ),
]
