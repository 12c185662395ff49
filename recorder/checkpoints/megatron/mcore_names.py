"""Megatron-Core parameter names mapped to the Hugging Face checkpoint's, one table per model family: dense
GPT (Llama/Qwen3), MoE (Qwen2-MoE/Qwen3-MoE: router, experts, gated shared expert, expert bias) and
Qwen3.5's hybrid layers (Gated DeltaNet and gated attention; `qwen3_5_moe`, `qwen3_next`).

Megatron fuses what Hugging Face keeps apart: `linear_qkv` holds, per query group, that group's query heads,
(with an output gate, its gate heads,) its key head and its value head; `linear_fc1` holds the gate
projection then the up projection; the layer norms live inside the linear layers that follow them. A
distributed checkpoint stacks homogeneous layers (`decoder.layers.X` with a leading layer axis) and the
experts (`experts.experts.linear_fc1.weight` with a leading expert axis; `experts.linear_fc1.weightN` from
TEGroupedMLP; `experts.local_experts.N.` from SequentialMLP). A Gated DeltaNet's `in_proj` and `conv1d` are
saved split by part (`in_proj.weight.query` ... `.alpha`), or whole in the same order. Experts come out in
the hub checkpoint's per-expert names (`mlp.experts.E.gate_proj.weight`), which vLLM loads as they are and
`hf_layout.fuse_experts` stacks for transformers' fused experts. Every Megatron tensor must map, or the load is
refused: a silently dropped tensor would evaluate a different model.

Pipeline stages: megatron-core (0.16) saves each stage's layers under their global numbers, a stacked tensor
as the stage's rows of the whole layer axis, a per-layer name with the layer's number in the whole model; the
embedding is the first stage's, the final norm and output layer the last's. So a series saved with pipeline
parallelism reads as one saved without. A layer axis that is not the model's, a layer number past the model's
last, or a layer no tensor names (a stage numbered from 0 on its own, a stage's part absent) is refused naming
the `.metadata` and the key: which layer a tensor belongs to is never guessed.
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
_STACKED_EXPERTS = re.compile(r"mlp\.experts\.(?:experts\.)?(linear_fc[12])\.weight")
_GDN_PARTS = {  # a Gated DeltaNet's split in_proj / conv1d part -> (Hugging Face tensor, its place in it)
    "self_attention.in_proj.weight.query": ("linear_attn.in_proj_qkv.weight", 0),
    "self_attention.in_proj.weight.key": ("linear_attn.in_proj_qkv.weight", 1),
    "self_attention.in_proj.weight.value": ("linear_attn.in_proj_qkv.weight", 2),
    "self_attention.in_proj.weight.z": ("linear_attn.in_proj_z.weight", 0),
    "self_attention.in_proj.weight.beta": ("linear_attn.in_proj_b.weight", 0),
    "self_attention.in_proj.weight.alpha": ("linear_attn.in_proj_a.weight", 0),
    "self_attention.conv1d.weight.query": ("linear_attn.conv1d.weight", 0),
    "self_attention.conv1d.weight.key": ("linear_attn.conv1d.weight", 1),
    "self_attention.conv1d.weight.value": ("linear_attn.conv1d.weight", 2),
}
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
    # Qwen3.5's Gated DeltaNet (megatron-core's GatedDeltaNet)
    "self_attention.in_proj.layer_norm_weight": "input_layernorm.weight",
    "self_attention.dt_bias": "linear_attn.dt_bias",
    "self_attention.A_log": "linear_attn.A_log",
    "self_attention.out_norm.weight": "linear_attn.norm.weight",
    "self_attention.out_proj.weight": "linear_attn.out_proj.weight",
}
_TOP = {
    "embedding.word_embeddings.weight": "model.embed_tokens.weight",
    "decoder.final_layernorm.weight": "model.norm.weight",
    "output_layer.weight": "lm_head.weight",
}


def to_hf(state: dict[str, torch.Tensor], config: dict[str, Any], *, where: Path) -> dict[str, torch.Tensor]:
    """The Hugging Face names and shapes of a Megatron-Core state dict; CheckpointError for a name it
    cannot place."""
    import torch

    layers = int(_text_config(config).get("num_hidden_layers", 0))
    _check_layers(state, layers, where)
    out: dict[str, torch.Tensor] = {}
    parts: dict[str, dict[int, torch.Tensor]] = {}
    for name, tensor in _unstack(state, layers).items():
        if name in _TOP:
            out[_TOP[name]] = tensor
            continue
        m = _LAYER.fullmatch(name)
        if m is None:
            raise CheckpointError(f"{where}: Megatron tensor {name!r} has no Hugging Face counterpart known here")
        prefix = f"model.layers.{m.group(1)}."
        if m.group(2) in _GDN_PARTS:
            hf, index = _GDN_PARTS[m.group(2)]
            parts.setdefault(prefix + hf, {})[index] = tensor
            continue
        for hf, value in _layer(m.group(2), tensor, _text_config(config), name, where):
            out[prefix + hf] = value
    for hf, pieces in parts.items():
        if sorted(pieces) != list(range(len(pieces))) or (hf.endswith("_qkv.weight") or "conv1d" in hf) != (
            len(pieces) == 3
        ):
            raise CheckpointError(f"{where}: {hf} has parts {sorted(pieces)} of its Megatron split: one is missing")
        out[hf] = torch.cat([pieces[i] for i in sorted(pieces)], dim=0)
    return out


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    """A multimodal config's language model part (Qwen3.5's `text_config`), else the config itself."""
    text = config.get("text_config")
    return text if isinstance(text, dict) else config


def _check_layers(state: dict[str, torch.Tensor], layers: int, where: Path) -> None:
    """CheckpointError unless the tensors' layers are exactly the model's `layers`, each by its global number:
    a stacked tensor's first axis is the whole layer axis, a per-layer name's number one of the model's."""
    numbered: set[int] = set()
    stacked = False
    for name, tensor in state.items():
        if not name.startswith("decoder.layers."):
            continue
        m = _LAYER.fullmatch(name)
        if m is None:  # stacked: the first axis is the layer axis, every stage's rows in it
            if tensor.shape[:1] != (layers,):
                raise CheckpointError(
                    f"{where}: {name} stacks {tensor.shape[0] if tensor.dim() else 0} layers along its first axis, "
                    f"the model config has {layers} (num_hidden_layers): the checkpoint is not this model's, or its "
                    "pipeline stages were not saved as one checkpoint"
                )
            stacked = True
        elif int(m.group(1)) >= layers:
            raise CheckpointError(
                f"{where}: {name} is layer {m.group(1)}, the model config has {layers} layers (num_hidden_layers): "
                "the checkpoint is not this model's"
            )
        else:
            numbered.add(int(m.group(1)))
    absent = [] if stacked else sorted(set(range(layers)) - numbered)
    if absent:
        shown = ", ".join(map(str, absent[:8])) + (" ..." if len(absent) > 8 else "")
        raise CheckpointError(
            f"{where}: no tensor of layer {shown} (decoder.layers.N.*), the model config has {layers} layers: a "
            "pipeline stage's part is missing, or its layers are numbered from 0 within the stage, not as "
            "megatron-core numbers them"
        )


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
    if rest == "self_attention.in_proj.weight":  # a Gated DeltaNet's in_proj saved whole
        qkv, z, b, a = split_gdn_in_proj(t, config)
        return [
            ("linear_attn.in_proj_qkv.weight", qkv),
            ("linear_attn.in_proj_z.weight", z),
            ("linear_attn.in_proj_b.weight", b),
            ("linear_attn.in_proj_a.weight", a),
        ]
    if rest == "self_attention.conv1d.weight":
        return [("linear_attn.conv1d.weight", t)]
    if rest == "mlp.linear_fc1.weight":
        gate, up = t.chunk(2, dim=0)
        return [("mlp.gate_proj.weight", gate), ("mlp.up_proj.weight", up)]
    if rest == "mlp.shared_experts.linear_fc1.weight":
        gate, up = t.chunk(2, dim=0)
        return [("mlp.shared_expert.gate_proj.weight", gate), ("mlp.shared_expert.up_proj.weight", up)]
    stacked = _STACKED_EXPERTS.fullmatch(rest)
    if stacked and t.dim() == 3:  # [experts, out, in]
        return [pair for e in range(t.shape[0]) for pair in _expert(e, stacked.group(1), t[e])]
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
    """Megatron's fused [groups * (heads_per_group [+ heads_per_group] + 2) * head_dim, ...] -> (q, k, v) in
    Hugging Face's order. With an output gate (Qwen3.5's full attention, recognised by the row count), each
    group holds its query heads, then their gate heads, and Hugging Face's q_proj holds every head's query
    followed by its gate."""
    import torch

    heads = int(config["num_attention_heads"])
    groups = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or config["hidden_size"] // heads)
    per_group = heads // groups
    rest = t.shape[1:]
    gated = t.shape[0] == groups * (2 * per_group + 2) * head_dim
    q_rows = (2 if gated else 1) * per_group * head_dim
    fused = t.reshape(groups, q_rows + 2 * head_dim, *rest)
    q, k, v = fused.split([q_rows, head_dim, head_dim], dim=1)
    if gated:  # [groups, (q heads | gate heads)] -> [heads, (q | gate)]
        query, gate = q.reshape(groups, 2, per_group, head_dim, *rest).unbind(1)
        q = torch.stack([query, gate], dim=2)
    return (
        q.reshape(-1, *rest).contiguous(),
        k.reshape(groups * head_dim, *rest).contiguous(),
        v.reshape(groups * head_dim, *rest).contiguous(),
    )


def split_gdn_in_proj(
    t: torch.Tensor, config: dict[str, Any]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A Gated DeltaNet's whole in_proj [q | k | v | z | beta | alpha] -> (qkv, z, beta, alpha)."""
    key_dim = int(config["linear_key_head_dim"]) * int(config["linear_num_key_heads"])
    value_heads = int(config["linear_num_value_heads"])
    value_dim = int(config["linear_value_head_dim"]) * value_heads
    qkv, z, b, a = t.split([2 * key_dim + value_dim, value_dim, value_heads, value_heads], dim=0)
    return qkv, z, b, a
