"""Megatron-Core parameter names mapped to the Hugging Face model's, for Llama/Qwen-shaped GPT models.

Megatron fuses what Hugging Face keeps apart: `linear_qkv` holds, per query group, that group's query heads
then its key head then its value head; `linear_fc1` holds the gate projection then the up projection; the
layer norms live inside the linear layers that follow them. A distributed checkpoint may also stack the
layers (`decoder.layers.X` with a leading layer axis) and the experts (`experts.linear_fc1.weight` with a
leading expert axis, TEGroupedMLP's `weightN`). Every Megatron tensor must map, or the load is refused:
a silently dropped tensor would evaluate a different model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.policy.errors import CheckpointError

if TYPE_CHECKING:
    import torch

_LAYER = re.compile(r"decoder\.layers\.(\d+)\.(.+)")
_EXPERT = re.compile(r"mlp\.experts\.(?:local_experts\.(\d+)\.(linear_fc[12])\.weight|(linear_fc[12])\.weight(\d+))")
_DIRECT = {
    "self_attention.linear_proj.weight": "self_attn.o_proj.weight",
    "self_attention.linear_proj.bias": "self_attn.o_proj.bias",
    "self_attention.linear_qkv.layer_norm_weight": "input_layernorm.weight",
    "input_layernorm.weight": "input_layernorm.weight",
    "self_attention.q_layernorm.weight": "self_attn.q_norm.weight",
    "self_attention.k_layernorm.weight": "self_attn.k_norm.weight",
    "mlp.linear_fc1.layer_norm_weight": "post_attention_layernorm.weight",
    "pre_mlp_layernorm.weight": "post_attention_layernorm.weight",
    "mlp.linear_fc2.weight": "mlp.down_proj.weight",
    "mlp.router.weight": "mlp.gate.weight",
    "mlp.router.expert_bias": "mlp.gate.e_score_correction_bias",
    "mlp.shared_experts.linear_fc2.weight": "mlp.shared_expert.down_proj.weight",
    "mlp.shared_experts.gate_weight": "mlp.shared_expert_gate.weight",
}
_TOP = {
    "embedding.word_embeddings.weight": "model.embed_tokens.weight",
    "decoder.final_layernorm.weight": "model.norm.weight",
    "output_layer.weight": "lm_head.weight",
}


def to_hf(state: dict[str, torch.Tensor], config: dict[str, Any], *, where: Path) -> dict[str, torch.Tensor]:
    """The Hugging Face names and shapes of a Megatron-Core state dict; CheckpointError for a name it
    cannot place."""
    layers = int(config.get("num_hidden_layers", 0))
    out: dict[str, torch.Tensor] = {}
    for name, tensor in _unstack(state, layers).items():
        if name in _TOP:
            out[_TOP[name]] = tensor
            continue
        m = _LAYER.fullmatch(name)
        if m is None:
            raise CheckpointError(f"{where}: Megatron tensor {name!r} has no Hugging Face counterpart known here")
        prefix = f"model.layers.{m.group(1)}."
        for hf, value in _layer(m.group(2), tensor, config, name, where):
            out[prefix + hf] = value
    return out


def _unstack(state: dict[str, torch.Tensor], layers: int) -> dict[str, torch.Tensor]:
    """Per-layer names for tensors saved with a leading layer axis (`decoder.layers.X`, no index)."""
    out: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        if name.startswith("decoder.layers.") and not _LAYER.fullmatch(name) and tensor.shape[:1] == (layers,):
            rest = name.removeprefix("decoder.layers.")
            for i in range(layers):
                out[f"decoder.layers.{i}.{rest}"] = tensor[i]
        else:
            out[name] = tensor
    return out


def _layer(
    rest: str, t: torch.Tensor, config: dict[str, Any], name: str, where: Path
) -> list[tuple[str, torch.Tensor]]:
    if rest in _DIRECT:
        return [(_DIRECT[rest], t)]
    if rest in ("self_attention.linear_qkv.weight", "self_attention.linear_qkv.bias"):
        kind = rest.rsplit(".", 1)[1]
        q, k, v = split_qkv(t, config)
        return [(f"self_attn.{p}_proj.{kind}", x) for p, x in zip("qkv", (q, k, v), strict=True)]
    if rest == "mlp.linear_fc1.weight":
        gate, up = t.chunk(2, dim=0)
        return [("mlp.gate_proj.weight", gate), ("mlp.up_proj.weight", up)]
    if rest == "mlp.shared_experts.linear_fc1.weight":
        gate, up = t.chunk(2, dim=0)
        return [("mlp.shared_expert.gate_proj.weight", gate), ("mlp.shared_expert.up_proj.weight", up)]
    if rest in ("mlp.experts.linear_fc1.weight", "mlp.experts.linear_fc2.weight"):  # stacked: [E, ...]
        fc = rest.split(".")[2]
        return [pair for e in range(t.shape[0]) for pair in _expert(e, fc, t[e])]
    m = _EXPERT.fullmatch(rest)
    if m:
        e, fc = (m.group(1), m.group(2)) if m.group(1) is not None else (m.group(4), m.group(3))
        return _expert(int(e), fc, t)
    raise CheckpointError(f"{where}: Megatron tensor {name!r} has no Hugging Face counterpart known here")


def _expert(e: int, fc: str, t: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    if fc == "linear_fc2":
        return [(f"mlp.experts.{e}.down_proj.weight", t)]
    gate, up = t.chunk(2, dim=0)
    return [(f"mlp.experts.{e}.gate_proj.weight", gate), (f"mlp.experts.{e}.up_proj.weight", up)]


def split_qkv(t: torch.Tensor, config: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Megatron's fused [groups * (heads_per_group + 2) * head_dim, ...] -> (q, k, v) in Hugging Face's order."""
    heads = int(config["num_attention_heads"])
    groups = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or config["hidden_size"] // heads)
    per_group = heads // groups
    rest = t.shape[1:]
    fused = t.reshape(groups, (per_group + 2) * head_dim, *rest)
    q, k, v = fused.split([per_group * head_dim, head_dim, head_dim], dim=1)
    return (
        q.reshape(heads * head_dim, *rest).contiguous(),
        k.reshape(groups * head_dim, *rest).contiguous(),
        v.reshape(groups * head_dim, *rest).contiguous(),
    )
