"""One tiny Llama's weights written in every checkpoint format, by the libraries that write them: Hugging
Face `save_pretrained` and torch.distributed.checkpoint (one process, or several ranks' shards). Megatron-Core
series are the golden ones the real megatron-core wrote (tests/kit/mcore_golden.py)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp

from tests.kit import sample_series


def tiny(step: int = 1, hidden_size: int = 32) -> tuple[Any, Any]:
    tok = sample_series.tokenizer()
    return tok, sample_series.model(len(tok), step, hidden_size=hidden_size)


def write_hf(path: Path, tok: Any, model: Any, shard: str = "40KB") -> Path:
    model.save_pretrained(path, max_shard_size=shard)
    tok.save_pretrained(path)
    return path


def state(model: Any, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    return {k: v.detach().to(dtype).clone() for k, v in model.state_dict().items()}


def write_dcp(path: Path, tensors: dict[str, Any]) -> Path:
    """One process writing a DCP checkpoint (no process group)."""
    with warnings.catch_warnings():  # "torch.distributed is disabled ... assuming ... a single process": it is
        warnings.simplefilter("ignore", UserWarning)
        dcp.save(tensors, checkpoint_id=str(path), no_dist=True)
    return path


def write_fsdp2_archive(run: Path, epoch: int, tok: Any, model: Any, world_size: int = 2) -> Path:
    """`run/fsdp2_epoch_N/` as an FSDP2 job leaves it: the model under "model", its config, a final_meta.json
    naming the run and how many ranks wrote it."""
    archive = run / f"fsdp2_epoch_{epoch}"
    write_dcp(archive, {"model": state(model)})
    (run / "config.json").write_text(json.dumps(model.config.to_dict()))
    tok.save_pretrained(run / "tokenizer")
    (archive / "final_meta.json").write_text(
        json.dumps({"source": str(run), "source_world_size": world_size, "epoch": epoch, "step": 10 * epoch})
    )
    return archive


def write_snapshot(run: Path, step: int, tok: Any, model: Any) -> Path:
    snap = run / "snapshots" / f"step_{step}"
    write_dcp(snap, state(model))
    (run / "config.json").write_text(json.dumps(model.config.to_dict()))
    tok.save_pretrained(run / "tokenizer")
    return snap


def logits(model: Any, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        out: torch.Tensor = model(torch.tensor([ids])).logits
    return out
