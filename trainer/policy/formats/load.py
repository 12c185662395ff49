"""A checkpoint's weights as a state dict, with the manifest of the files read (sha256 per file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.policy.errors import CheckpointError
from trainer.policy.formats.detect import DCP_METADATA, SHARD, CheckpointInfo
from trainer.policy.formats.manifest import Manifest, manifest_of

DTYPES = ("fp32", "bf16", "fp16")


def torch_dtype(dtype: str) -> Any:
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]


def load_state_dict(
    info: CheckpointInfo, *, dtype: str, expected: dict[str, Any] | None = None
) -> tuple[dict[str, Any], Manifest]:
    """The weights of `info` in `dtype`. `expected` (a model's state dict) gives names and shapes; DCP loads
    into it in place, without a process group."""
    if info.format == "torch-dcp":
        return _dcp(info.path, dtype, expected)
    if info.format in ("hf-safetensors", "recorder"):
        return _safetensors(info.path, dtype)
    raise CheckpointError(f"{info.path}: format {info.format} has no state-dict loader here")


def _dcp(path: Path, dtype: str, expected: dict[str, Any] | None) -> tuple[dict[str, Any], Manifest]:
    from torch.distributed.checkpoint import state_dict_loader
    from torch.distributed.checkpoint.state_dict_loader import _load_state_dict_from_keys

    files = [path / DCP_METADATA, *(p for p in path.iterdir() if SHARD.search(p.name))]
    manifest = manifest_of(path, files)
    try:
        if expected is None:
            state: dict[str, Any] = dict(_load_state_dict_from_keys(checkpoint_id=str(path)))
        else:
            state = {k: v.detach().clone() for k, v in expected.items()}
            state_dict_loader.load(state, checkpoint_id=str(path), no_dist=True)
    except (RuntimeError, ValueError, KeyError, OSError) as e:
        raise CheckpointError(f"{path}: cannot read the DCP checkpoint: {e}") from e
    want = torch_dtype(dtype)
    return {k: v.to(want) if v.is_floating_point() else v for k, v in state.items()}, manifest


def _safetensors(path: Path, dtype: str) -> tuple[dict[str, Any], Manifest]:
    from safetensors.torch import load_file

    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise CheckpointError(f"{path}: no *.safetensors file")
    state: dict[str, Any] = {}
    for f in files:
        state.update(load_file(str(f)))
    want = torch_dtype(dtype)
    return {k: v.to(want) if v.is_floating_point() else v for k, v in state.items()}, manifest_of(path, files)
