"""Where the trainer computes and in what precision: the config's `device` and `dtype` made concrete."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainer.errors import ConfigError

if TYPE_CHECKING:
    import torch

DTYPES = {"fp32": "float32", "bf16": "bfloat16"}


def resolve_device(name: str) -> torch.device:
    """`auto` is the first GPU when torch sees one, else the CPU; a GPU asked for but absent is an error."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError([f"device: {name!r}, but torch sees no GPU here; use device=cpu or auto"])
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError([f"device: {name!r}, but only {torch.cuda.device_count()} GPU(s) are visible"])
    return device


def resolve_dtype(name: str) -> torch.dtype:
    """fp32 -> torch.float32, bf16 -> torch.bfloat16."""
    import torch

    return getattr(torch, DTYPES[name])  # type: ignore[no-any-return]


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (timings and the weight-update time must include it)."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)
