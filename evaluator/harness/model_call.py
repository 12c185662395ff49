"""How the evaluator calls a model (docs/zero-shot.md, "The model protocol"): a Hugging Face causal LM is
called with `input_ids=` and `attention_mask=` and answers `.logits`; any other `nn.Module` is called with
the token ids alone, `model(ids)`, and may answer the logits tensor itself. Rows are right-padded and
attention is causal, so a scored position never sees padding and the mask changes no score."""

from __future__ import annotations

import inspect
from typing import Any

DEFAULT_MAX_LENGTH = 2048


def logits(model: Any, ids: Any, mask: Any = None) -> Any:
    """[B, T, vocab] logits of `ids` [B, T]."""
    import torch

    if _takes_mask(model):
        out = model(input_ids=ids, attention_mask=mask)
    else:
        out = model(ids)
    return out if isinstance(out, torch.Tensor) else out.logits


DECLARED_MAX_LENGTH = "_recorder_max_length"  # set by declare_max_length: the team's own word wins


def declare_max_length(model: Any, positions: int) -> None:
    """The positions a team declared its model takes (a model that names them nowhere the evaluator looks)."""
    setattr(model, DECLARED_MAX_LENGTH, positions)


def max_length(model: Any) -> int:
    """Positions the model was built for: as declared, else its config's max_position_embeddings, its own
    `max_seq_len`, else 2048. Longer inputs keep their last tokens (lm-eval's convention)."""
    config = getattr(model, "config", None)
    candidates = (getattr(config, "max_position_embeddings", None), getattr(model, "max_seq_len", None))
    for value in (getattr(model, DECLARED_MAX_LENGTH, None), *candidates):
        if isinstance(value, int) and value > 0:
            return value
    return DEFAULT_MAX_LENGTH


def _takes_mask(model: Any) -> bool:
    try:
        return "attention_mask" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError, AttributeError):
        return False
