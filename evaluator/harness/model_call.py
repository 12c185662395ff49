"""How the evaluator calls a model (docs/zero-shot.md, "The model protocol"): a Hugging Face causal LM is
called with `input_ids=` and `attention_mask=` and answers `.logits`; any other `nn.Module` is called with
the token ids alone, `model(ids)`, and may answer the logits tensor itself. Rows are right-padded and
attention is causal, so a scored position never sees padding and the mask changes no score."""

from __future__ import annotations

import inspect
from typing import Any

from trainer.policy.errors import ModelCodeError


def logits(model: Any, ids: Any, mask: Any = None) -> Any:
    """[B, T, vocab] logits of `ids` [B, T]."""
    import torch

    try:
        out = model(input_ids=ids, attention_mask=mask) if _takes_mask(model) else model(ids)
    except (IndexError, RuntimeError, ValueError, TypeError) as e:  # the team's forward, on inputs it refuses
        raise ModelOutputError(
            f"the model's forward failed on ids of shape {list(ids.shape)} ({type(e).__name__}: {_first_line(e)}): "
            f"inputs are cut to {max_length(model)} positions; declare the positions the model takes, "
            "[tool.recorder] max_length in the model code's pyproject.toml"
        ) from e
    if isinstance(out, torch.Tensor):
        return out
    return _declared_entry(model, out) if hasattr(model, DECLARED_LOGITS) else _logits_attribute(model, out)


DECLARED_LOGITS = "_recorder_logits"  # set by declare_logits: which entry of the forward's output is the logits


class ModelOutputError(ModelCodeError):
    """A forward whose output holds no logits where the evaluator was told (or, told nothing, not a tensor)."""


def declare_logits(model: Any, entry: int | str) -> None:
    """Where a team's forward puts its logits: the index in its tuple, the key in its dict, or an attribute."""
    setattr(model, DECLARED_LOGITS, entry)


def _declared_entry(model: Any, out: Any) -> Any:
    import torch

    entry = getattr(model, DECLARED_LOGITS)
    if isinstance(out, (tuple, list)) and isinstance(entry, int) and -len(out) <= entry < len(out):
        found = out[entry]
    elif isinstance(out, dict) and entry in out:
        found = out[entry]
    elif isinstance(entry, str) and not isinstance(out, (tuple, list, dict)) and hasattr(out, entry):
        found = getattr(out, entry)
    else:
        raise ModelOutputError(
            f"the model's forward returns {_shape_of(out)}, with no entry {entry!r} (declared as [tool.recorder] "
            "logits): declare the tuple index, dict key or attribute that holds the logits"
        )
    if not isinstance(found, torch.Tensor):
        raise ModelOutputError(
            f"the model's forward returns {_shape_of(out)}, whose entry {entry!r} (declared as [tool.recorder] "
            f"logits) is a {type(found).__name__}, not the logits tensor"
        )
    return found


def _logits_attribute(model: Any, out: Any) -> Any:
    """An output object's `.logits` (a Hugging Face model's); a tuple or dict is never guessed at."""
    import torch

    found = (
        None if isinstance(out, (tuple, list, dict)) and not hasattr(out, "logits") else getattr(out, "logits", None)
    )
    if not isinstance(found, torch.Tensor):
        example = "0" if isinstance(out, (tuple, list)) else "'logits'"
        raise ModelOutputError(
            f"the model's forward returns {_shape_of(out)}, not a logits tensor: declare which entry holds the "
            f"logits in the model code's pyproject.toml, [tool.recorder] logits = {example} (a tuple index, a dict "
            "key or an attribute name)"
        )
    return found


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [""])[0]


def _shape_of(out: Any) -> str:
    """The forward's output in words: a tuple of 2, a dict with keys a, b."""
    if isinstance(out, (tuple, list)):
        return f"a {type(out).__name__} of {len(out)}"
    if isinstance(out, dict):
        return f"a dict with keys {', '.join(map(str, out))}"
    return f"a {type(out).__name__}"


DECLARED_MAX_LENGTH = "_recorder_max_length"  # set by declare_max_length: the team's own word wins


def declare_max_length(model: Any, positions: int) -> None:
    """The positions a team declared its model takes (a model that names them nowhere the evaluator looks)."""
    setattr(model, DECLARED_MAX_LENGTH, positions)


def max_length(model: Any) -> int:
    """Positions the model was built for: as declared, else its config's max_position_embeddings, else its own
    `max_seq_len`. Longer inputs keep their last tokens (lm-eval's convention). A model that says none of them
    is refused (ModelLengthError): a number assumed here would cut or overrun every long request unseen."""
    config = getattr(model, "config", None)
    candidates = (getattr(config, "max_position_embeddings", None), getattr(model, "max_seq_len", None))
    for value in (getattr(model, DECLARED_MAX_LENGTH, None), *candidates):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    raise ModelLengthError(
        f"the {type(model).__name__} model names the positions it takes nowhere (no config.max_position_embeddings, "
        "no max_seq_len): declare them, [tool.recorder] max_length = N (or a key path in its config) in the model "
        "code's pyproject.toml"
    )


class ModelLengthError(ModelCodeError):
    """A model whose context length is neither declared nor said by the model itself."""


def _takes_mask(model: Any) -> bool:
    try:
        return "attention_mask" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError, AttributeError):
        return False
