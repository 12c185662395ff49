"""A Hugging Face checkpoint's tensors in the layout of the transformers model they are loaded into.

Hub checkpoints (and what `mcore_names` makes of Megatron's) keep one tensor per expert:
`mlp.experts.E.gate_proj.weight`, `.up_proj.weight`, `.down_proj.weight`. transformers 5 holds the experts
of a layer in two fused parameters, `mlp.experts.gate_up_proj` [experts, 2 * ffn, hidden] (each expert's
gate rows, then its up rows) and `mlp.experts.down_proj` [experts, hidden, ffn]; its `from_pretrained`
converts on load, and so does this, for models built from a config.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

_PER_EXPERT = re.compile(r"(.+\.mlp\.experts)\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight")


def fuse_experts(state: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """`state` with per-expert tensors stacked into the fused parameters `names` holds; as it was where the
    model keeps experts apart (or has none)."""
    import torch

    experts: dict[str, dict[str, dict[int, torch.Tensor]]] = {}
    out: dict[str, Any] = {}
    for name, t in state.items():
        m = _PER_EXPERT.fullmatch(name)
        if m is None or f"{m.group(1)}.gate_up_proj" not in names:
            out[name] = t
            continue
        experts.setdefault(m.group(1), {}).setdefault(m.group(3), {})[int(m.group(2))] = t
    for prefix, parts in experts.items():
        count = max(len(p) for p in parts.values())
        order = range(count)
        if any(sorted(p) != list(order) for p in parts.values()) or len(parts) != 3:
            out.update({f"{prefix}.{e}.{kind}.weight": t for kind, p in parts.items() for e, t in p.items()})
            continue  # incomplete: left per expert, so that the name check says which are missing
        gate_up = [torch.cat([parts["gate_proj"][e], parts["up_proj"][e]]) for e in order]
        out[f"{prefix}.gate_up_proj"] = torch.stack(gate_up)
        out[f"{prefix}.down_proj"] = torch.stack([parts["down_proj"][e] for e in order])
    return out
