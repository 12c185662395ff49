"""The checkpoint's files: `step_NNNNNNN/` holding model.safetensors (step and weight-update time in its
metadata), config.json and tokenizer.json. Written to a temporary directory, fsynced, then renamed, so a
directory that exists is complete. Read through safetensors only: nothing is ever unpickled.

The format is the policy's, shared by the trainer that writes it and the evaluator that reads it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from recorder.checkpoints.torch_dcp.fsdp2_layout import step_dir
from recorder.store.run import fsync_dir
from trainer.policy.config_check import check_config_matches_weights
from trainer.policy.errors import CheckpointError
from trainer.policy.tokenizer import Tokenizer, from_json

WEIGHTS = "model.safetensors"


def step_dirname(step: int) -> str:
    return step_dir(step)


def write_checkpoint(
    directory: Path, tensors: dict[str, Any], *, config_json: str, tokenizer_json: str, weight_update_ns: int, step: int
) -> tuple[str, int]:
    """Write the three files into `directory` atomically (temp dir, fsync, rename). -> (sha256, bytes)."""
    from safetensors.torch import save

    tmp = directory.parent / f".tmp-{directory.name}-{os.getpid()}-{threading.get_ident()}"
    try:
        if directory.exists():
            raise CheckpointError(f"{directory} already exists: a checkpoint is never overwritten")
        tmp.mkdir(parents=True)
        data = save(tensors, metadata={"weight_update_ns": str(weight_update_ns), "step": str(step), "format": "pt"})
        _write_synced(tmp / WEIGHTS, data)
        _write_synced(tmp / "config.json", config_json.encode())
        _write_synced(tmp / "tokenizer.json", tokenizer_json.encode())
        fsync_dir(tmp)
        os.rename(tmp, directory)
        fsync_dir(directory.parent)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointError(f"checkpoint for step {step} could not be written to {directory}: {e}") from e
    return hashlib.sha256(data).hexdigest(), len(data)


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_metadata(path: Path) -> dict[str, str]:
    """The safetensors metadata of a checkpoint directory's weights (holds weight_update_ns and step)."""
    from safetensors import SafetensorError, safe_open

    weights = Path(path) / WEIGHTS
    if not weights.is_file():
        raise CheckpointError(f"{weights}: missing; is {path} a checkpoint directory?")
    try:
        with safe_open(str(weights), framework="pt") as f:
            return dict(f.metadata() or {})
    except (OSError, SafetensorError) as e:
        raise CheckpointError(f"{weights}: not a readable safetensors file: {e}") from e


def load_checkpoint(path: Path | str) -> tuple[Any, Tokenizer]:
    """(model, tokenizer) from a checkpoint directory; weights via safetensors only (never unpickled)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM

    path = Path(path)
    for name in (WEIGHTS, "config.json", "tokenizer.json"):
        if not (path / name).is_file():
            raise CheckpointError(f"{path / name}: missing; a checkpoint holds {WEIGHTS}, config.json, tokenizer.json")
    try:
        config = AutoConfig.from_pretrained(str(path))
        check_config_matches_weights(config, path / WEIGHTS)  # before any allocation
        model = AutoModelForCausalLM.from_config(config).float()
        state = load_file(str(path / WEIGHTS))
        model.load_state_dict(state, strict=True)
    except (OSError, ValueError, RuntimeError, SafetensorError) as e:  # SafetensorError: not a safetensors file
        raise CheckpointError(f"{path}: cannot load the checkpoint: {e}") from e
    model.eval()
    return model, from_json((path / "tokenizer.json").read_text())
