"""Which tensors a checkpoint and the model its config builds do not share, in a few lines a person can read.

A config that does not describe the weights (a dense model's config given to a MoE checkpoint) is refused by
the parameter count; the refusal then names the tensors with no counterpart on either side, layer numbers
folded into `*` and grouped under the first part of their name the other side does not have
(`model.layers.*.mlp.shared_expert.*`). The model is built on PyTorch's meta device (no memory), with at
most `LAYERS` layers: the names of a layer kind repeat in every layer of that kind.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

LAYERS = 8
SHOWN = 6
_INDEX = re.compile(r"\.\d+(?=\.|$)")


def model_names(config: Any) -> set[str]:
    """The state-dict names of the Hugging Face model `config` builds (its first LAYERS layers)."""
    import torch
    from transformers import AutoModelForCausalLM

    small = copy.deepcopy(config)
    layers = getattr(small, "num_hidden_layers", None)
    if isinstance(layers, int) and layers > LAYERS:
        small.num_hidden_layers = LAYERS
        kinds = getattr(small, "layer_types", None)
        if isinstance(kinds, list):
            small.layer_types = kinds[:LAYERS]
    with torch.device("meta"):
        return set(AutoModelForCausalLM.from_config(small).state_dict())


def unmatched(names: Iterable[str], others: Iterable[str]) -> list[str]:
    """The groups of `names` that `others` lacks, layer numbers folded: each name cut one part past the
    longest start it shares with a name of `others`, `.*` after it where anything was cut."""
    theirs = {_fold(n) for n in others}
    starts = {tuple(n.split(".")[:i]) for n in theirs for i in range(len(n.split(".")) + 1)}
    groups = set()
    for name in {_fold(n) for n in names} - theirs:
        parts = name.split(".")
        shared = max(i for i in range(len(parts) + 1) if tuple(parts[:i]) in starts)
        kept = parts[: shared + 1]
        groups.add(".".join(kept) + (".*" if len(kept) < len(parts) else ""))
    return sorted(groups)


def describe(groups: list[str]) -> str:
    """`groups` as one phrase: the first SHOWN, and how many more."""
    more = len(groups) - SHOWN
    return ", ".join(groups[:SHOWN]) + (f" and {more} more" if more > 0 else "")


def _fold(name: str) -> str:
    return _INDEX.sub(".*", name)
