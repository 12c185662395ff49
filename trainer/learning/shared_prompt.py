"""The update's log-probs with each distinct prompt run through the model once.

A GRPO group's G completions share one prompt. Run as G whole sequences, the prompt's tokens go through
every layer G times, forward and backward. Here each distinct prompt of a micro-batch runs once, with a KV
cache, the cache is indexed out to the prompt's rows, and the completions attend to it. The loss is the same
function of the weights: the G rows' gradients into the prompt's keys and values add up in the one copy
(the backward of the index), as prefix-sharing GRPO trainers do. At 16 prompt and 64 completion tokens and
G = 8 that is 7/8 of a fifth of the layers' work saved, and the LM head runs on completion positions only
(TRL's `logits_to_keep`).

Any transformers causal LM takes this path (one that accepts a KV cache and `logits_to_keep`); a model
without them, or a micro-batch whose rows share no prompt, runs whole sequences as before.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from trainer.learning.grpo import Batch, token_logprobs
from trainer.learning.head_logprobs import fused_head_weight, head_logprobs
from trainer.policy.sampling import cache_keyword

if TYPE_CHECKING:
    import torch


def completion_logprobs(model: Any, batch: Batch, grad_hint: torch.Tensor | None = None) -> torch.Tensor:
    """log p(target) [M, T] of a right-padded micro-batch: exact on completion positions (mask 1), and 0 or
    the plain value elsewhere (the loss masks those). `grad_hint` [M, T]: the gradient the loss will send back,
    when known before the forward (trainer/learning/head_logprobs.py: a fused head then does its backward's work
    early)."""
    weight = fused_head_weight(model)
    hint = grad_hint if weight is not None else None
    cache_arg = _cache_arg(model)
    if cache_arg is None or bool((batch.mask.sum(dim=1) == 0).any()):  # no cache, or a row with no completion
        return _logprobs(_states(model, weight, input_ids=batch.inputs)[0], weight, batch.targets, hint)
    prompt_len = _prompt_lengths(batch)
    rows, firsts = _distinct_prompts(batch.inputs, prompt_len)
    if len(firsts) == len(rows):
        return _logprobs(_states(model, weight, input_ids=batch.inputs)[0], weight, batch.targets, hint)
    return _shared(model, weight, batch, prompt_len, rows, firsts, cache_arg, hint)


def _states(model: Any, weight: torch.Tensor | None, **inputs: Any) -> tuple[torch.Tensor, Any]:
    """-> (the last hidden states [.., H] when the head is fused (`weight`), else the logits [.., V]; the
    forward's whole output, for its KV cache)."""
    if weight is None:
        out = model(**inputs)
        return out.logits, out
    out = model.base_model(**inputs)
    return out.last_hidden_state, out


def _logprobs(
    states: torch.Tensor, weight: torch.Tensor | None, targets: torch.Tensor, hint: torch.Tensor | None = None
) -> torch.Tensor:
    """log p(target) from what `_states` returned (`hint`: the gradient expected back, for a fused head)."""
    return token_logprobs(states, targets) if weight is None else head_logprobs(states, weight, targets, hint)


def _prompt_lengths(batch: Batch) -> list[int]:
    """Prompt tokens per row (<bos> included): the first completion target sits at position P - 1."""
    starts = batch.mask.argmax(dim=1)  # [M]: first position with mask 1
    return [int(s) + 1 for s in starts.tolist()]


def _distinct_prompts(inputs: torch.Tensor, prompt_len: list[int]) -> tuple[list[int], list[int]]:
    """-> (for each row the index of its distinct prompt, the first row holding each distinct prompt)."""
    seen: dict[tuple[int, ...], int] = {}
    rows: list[int] = []
    firsts: list[int] = []
    for i, row in enumerate(inputs.tolist()):
        key = tuple(row[: prompt_len[i]])
        if key not in seen:
            seen[key] = len(firsts)
            firsts.append(i)
        rows.append(seen[key])
    return rows, firsts


def _cache_arg(model: Any) -> str | None:
    """The forward's KV-cache keyword, or None when it takes no cache or no `logits_to_keep`."""
    params = inspect.signature(model.forward).parameters
    if "logits_to_keep" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    return cache_keyword(model)


def _shared(
    model: Any,
    weight: torch.Tensor | None,
    batch: Batch,
    prompt_len: list[int],
    rows: list[int],
    firsts: list[int],
    cache_arg: str,
    hint: torch.Tensor | None,
) -> torch.Tensor:
    import torch

    inputs, targets = batch.inputs, batch.targets
    device = inputs.device
    width = inputs.shape[1]
    longest = max(prompt_len)
    # The distinct prompts, left-padded to the longest so that every prompt ends at the last position.
    prefix = torch.zeros((len(firsts), longest), dtype=inputs.dtype, device=device)
    prefix_mask = torch.zeros((len(firsts), longest), dtype=torch.long, device=device)
    for u, i in enumerate(firsts):
        n = prompt_len[i]
        prefix[u, longest - n :] = inputs[i, :n]
        prefix_mask[u, longest - n :] = 1
    prefix_pos = (prefix_mask.cumsum(-1) - 1).clamp(min=0)
    last = {} if weight is not None else {"logits_to_keep": 1}  # the head runs on the prompt's last position only
    prefix_states, out = _states(
        model, weight, input_ids=prefix, attention_mask=prefix_mask, position_ids=prefix_pos, use_cache=True, **last
    )
    index = torch.tensor(rows, device=device)
    cache = out.cache if hasattr(out, "cache") and out.cache is not None else out.past_key_values
    cache.reorder_cache(index)  # [U, ...] -> [M, ...]: one prompt's keys and values for each of its rows
    # Each row's completion inputs: positions P_i .. T-1 of the sequence, right-padded to the widest.
    suffix_len = width - min(prompt_len)
    suffix = torch.zeros((len(rows), suffix_len), dtype=inputs.dtype, device=device)
    suffix_targets = torch.zeros_like(suffix)
    # The hint where the gradient lands: the assembly below sends each row's first completion position to
    # `first` and the rest to the start of its `rest` row (zero past a row's end).
    suffix_hint = None if hint is None else torch.zeros(suffix.shape, dtype=hint.dtype, device=device)
    for i, n in enumerate(prompt_len):
        suffix[i, : width - n] = inputs[i, n:]
        suffix_targets[i, : width - n] = targets[i, n:]
        if suffix_hint is not None and hint is not None:
            suffix_hint[i, : width - n] = hint[i, n:]
    mask = torch.cat([prefix_mask[index], torch.ones_like(suffix)], dim=1)
    starts = torch.tensor(prompt_len, device=device)
    suffix_pos = starts[:, None] + torch.arange(suffix_len, device=device)
    suffix_inputs = {"input_ids": suffix, "attention_mask": mask, "position_ids": suffix_pos, cache_arg: cache}
    later, _ = _states(model, weight, use_cache=True, **suffix_inputs)  # [M, S, H or V]
    first_targets = targets[torch.arange(len(rows)), starts - 1][:, None]
    first_hint = None if hint is None else hint[torch.arange(len(rows)), starts - 1][:, None]
    first = _logprobs(prefix_states[:, -1:][index], weight, first_targets, first_hint)  # [M, 1]
    rest = _logprobs(later, weight, suffix_targets, suffix_hint)  # [M, S]
    if len(set(prompt_len)) == 1:
        n = prompt_len[0]
        return torch.cat([first.new_zeros((len(rows), n - 1)), first, rest[:, : width - n]], dim=1)
    return torch.stack(
        [torch.cat([first.new_zeros(n - 1), first[i], rest[i, : width - n]]) for i, n in enumerate(prompt_len)]
    )
