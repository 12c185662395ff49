"""`--model-config DIR` and `--tokenizer DIR`, which `import-checkpoints`, `eval`, `zero-shot` and `export-hf`
take; zero-shot also reads the tokenizer from the variable a team's job scripts set (`TokenizerFromEnvOption`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from recorder.cli.terminal import panels

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


def _tokenizer(envvar: str | None = None) -> Any:
    return typer.Option(
        "--tokenizer",
        rich_help_panel=panels.MODEL,
        help="The tokenizer's directory (or file), for checkpoints that come without one (default: the one the "
        "checkpoint's own config names: config.yaml's policy.tokenizer.name, a local directory or in the Hugging "
        "Face cache; a team's train_metadata.yaml's).",
        envvar=envvar,
    )


TokenizerOption = Annotated[Path | None, _tokenizer()]
TokenizerFromEnvOption = Annotated[Path | None, _tokenizer("EVAL_TOKENIZER_PATH")]
