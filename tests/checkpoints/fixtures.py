"""One tiny Llama's weights written in every checkpoint format, by the libraries that write them: Hugging
Face `save_pretrained`, torch.distributed.checkpoint (one process, or several ranks' shards), and
Megatron-Core's names in NeMo-RL's layout."""

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


def megatron_names(model: Any) -> dict[str, torch.Tensor]:
    """The model's weights as Megatron-Core's GPT model names them: fused QKV (per query group: its query
    heads, its key, its value), fused gate|up, layer norms inside the linear layers, layers stacked on a
    leading axis as dist-checkpointing saves them."""
    cfg = model.config
    sd = model.state_dict()
    heads, groups = cfg.num_attention_heads, cfg.num_key_value_heads
    hd = cfg.hidden_size // heads
    per_group = heads // groups
    layers: dict[str, list[torch.Tensor]] = {}

    def add(name: str, t: torch.Tensor) -> None:
        layers.setdefault(name, []).append(t.detach().clone())

    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        q = sd[p + "self_attn.q_proj.weight"].reshape(groups, per_group * hd, -1)
        k = sd[p + "self_attn.k_proj.weight"].reshape(groups, hd, -1)
        v = sd[p + "self_attn.v_proj.weight"].reshape(groups, hd, -1)
        add("self_attention.linear_qkv.weight", torch.cat([q, k, v], dim=1).reshape(-1, cfg.hidden_size))
        add("self_attention.linear_qkv.layer_norm_weight", sd[p + "input_layernorm.weight"])
        add("self_attention.linear_proj.weight", sd[p + "self_attn.o_proj.weight"])
        add("mlp.linear_fc1.weight", torch.cat([sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"]]))
        add("mlp.linear_fc1.layer_norm_weight", sd[p + "post_attention_layernorm.weight"])
        add("mlp.linear_fc2.weight", sd[p + "mlp.down_proj.weight"])
    out = {f"decoder.layers.{k}": torch.stack(v) for k, v in layers.items()}
    out["embedding.word_embeddings.weight"] = sd["model.embed_tokens.weight"].clone()
    out["decoder.final_layernorm.weight"] = sd["model.norm.weight"].clone()
    out["output_layer.weight"] = sd["lm_head.weight"].clone()
    return out


def write_mcore_weights(step_dir: Path, tok: Any, model: Any) -> Path:
    """`step_dir/policy/weights/iter_0000000/` (DCP with Megatron's names), config.json beside it and the
    tokenizer in `policy/tokenizer/` (training_info.json and config.yaml are the caller's)."""
    weights = step_dir / "policy" / "weights"
    write_dcp(weights / "iter_0000000", megatron_names(model))
    (weights / "iter_0000000" / "metadata.json").write_text(json.dumps({"sharded_backend": "torch_dist"}))
    (weights / "config.json").write_text(json.dumps(model.config.to_dict()))
    tok.save_pretrained(step_dir / "policy" / "tokenizer")
    return weights


def logits(model: Any, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        out: torch.Tensor = model(torch.tensor([ids])).logits
    return out
