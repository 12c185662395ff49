"""Batched, KV-cached, batch-invariant sampling: the torch rollout's core and the evaluator's.

Batch invariance: each sample's randomness comes only from its own seed (a per-sample generator draws all
its uniforms up front), prompts are left-padded with position ids that restart at 0 on the first real
token and an attention mask hiding the padding, and the choice of a token uses only that row's logits.
So the same (prompt, seed) gives the same completion whatever the batch size or the other prompts in the
batch (tests/trainer/test_sampling.py checks this at batch sizes 1, 7 and 64).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from trainer.policy.tokenizer import Tokenizer

if TYPE_CHECKING:
    import torch


def sample_seed(*parts: int | str) -> int:
    """A 63-bit seed from parts such as (run_seed, step, prompt_index, sample_index): stable everywhere."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def generate(
    model: Any,
    tokenizer: Tokenizer,
    prompts: list[str],
    *,
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    seeds: list[int],
) -> list[str]:
    """One completion per (prompt, seed), decoded up to <eos>."""
    ids = generate_ids(
        model, tokenizer, prompts, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, seeds=seeds
    )
    return [tokenizer.decode(x) for x in ids]


def generate_ids(
    model: Any,
    tokenizer: Tokenizer,
    prompts: list[str],
    *,
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    seeds: list[int],
) -> list[list[int]]:
    """Completion token ids per prompt, ending with <eos> when the model emitted it within the budget."""
    import torch

    if len(prompts) != len(seeds):
        raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds: one seed per prompt")
    if not prompts:
        return []
    prompt_ids = [[tokenizer.bos_id, *tokenizer.encode(p)] for p in prompts]
    input_ids, attention = _left_pad(prompt_ids, tokenizer.pad_id)
    noise = _exponential_noise(seeds, max_new_tokens, _vocab(model))  # [B, T, V]
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            out_ids = _decode_loop(
                model,
                input_ids,
                attention,
                noise,
                temperature,
                top_p,
                max_new_tokens,
                tokenizer.eos_id,
                tokenizer.pad_id,
            )
    finally:
        model.train(was_training)
    return out_ids


def _vocab(model: Any) -> int:
    return int(model.get_output_embeddings().weight.shape[0])


def _left_pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
        mask[i, width - len(s) :] = 1
    return ids, mask


def _exponential_noise(seeds: list[int], steps: int, vocab: int) -> torch.Tensor:
    """Exp(1) noise [B, T, V], row b drawn only from seed b (so it cannot depend on the batch)."""
    import torch

    rows = []
    for seed in seeds:
        g = torch.Generator().manual_seed(seed)
        u = torch.rand((steps, vocab), generator=g, dtype=torch.float64)
        rows.append(-torch.log1p(-u))  # u in [0, 1): -log(1-u) is Exp(1), finite
    return torch.stack(rows)


def choose_tokens(logits: torch.Tensor, noise: torch.Tensor, temperature: float, top_p: float) -> torch.Tensor:
    """Next token per row from logits [B, V] and Exp(1) noise [B, V]: the exponential race
    argmax(p_i / E_i) samples from p exactly; temperature 0 is greedy. Row-wise only. -> [B]."""
    import torch

    logits = logits.double()
    if temperature == 0.0:
        return logits.argmax(dim=-1)
    logp = torch.log_softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        logp = _top_p_filter(logp, top_p)
    return (logp - torch.log(noise)).argmax(dim=-1)


def _top_p_filter(logp: torch.Tensor, top_p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose mass reaches top_p (always the top one)."""
    import torch

    sorted_logp, order = logp.sort(dim=-1, descending=True)
    probs = sorted_logp.exp()
    mass_before = probs.cumsum(dim=-1) - probs
    drop_sorted = mass_before >= top_p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logp.masked_fill(drop, float("-inf"))


def _decode_loop(
    model: Any,
    input_ids: torch.Tensor,
    attention: torch.Tensor,
    noise: torch.Tensor,
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    eos_id: int,
    pad_id: int,
) -> list[list[int]]:
    import torch

    batch = input_ids.shape[0]
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    out: list[list[int]] = [[] for _ in range(batch)]
    done = torch.zeros(batch, dtype=torch.bool)
    past = None
    cache_arg = _cache_arg(model)
    step_ids, step_pos = input_ids, positions
    for t in range(max_new_tokens):
        res = model(
            input_ids=step_ids,
            attention_mask=attention,
            position_ids=step_pos,
            use_cache=True,
            logits_to_keep=1,
            **{cache_arg: past},
        )
        past = getattr(res, cache_arg)
        tokens = choose_tokens(res.logits[:, -1, :], noise[:, t, :], temperature, top_p)
        tokens = torch.where(done, torch.full_like(tokens, pad_id), tokens)
        for i in range(batch):
            if not done[i]:
                out[i].append(int(tokens[i]))
        done |= tokens == eos_id
        if bool(done.all()):
            break
        step_ids = tokens[:, None]
        step_pos = step_pos[:, -1:] + 1
        attention = torch.cat([attention, torch.ones((batch, 1), dtype=attention.dtype)], dim=1)
    return out


def _cache_arg(model: Any) -> str:
    """transformers 5 names the KV cache argument `cache`; older versions (vLLM's venv) `past_key_values`."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
