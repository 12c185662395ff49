"""The sections an evaluating command's help lists its options in (typer's `rich_help_panel`), one set for
`eval` and `zero-shot`, so that an option means the same in both and is found under the same heading."""

from __future__ import annotations

from typing import Final

WHICH: Final = "Which checkpoints"
TASKS: Final = "Tasks"
MODEL: Final = "Model"
BACKEND: Final = "Backend"
VLLM: Final = "vLLM backend"
WORKERS: Final = "Workers"
CHECKS: Final = "Checks"
HOLDOUT: Final = "Holdout check"
SIGNING: Final = "Signing"
OUTPUT: Final = "Output"
