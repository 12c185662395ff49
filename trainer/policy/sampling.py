"""Batched, KV-cached, batch-invariant sampling: the torch rollout's core and the evaluator's.

Batch invariance: each sample's randomness comes only from its own seed (stateless Gumbel noise hashed from
(seed, position, token id) on the device, trainer/policy/noise.py, in a two-stage draw: `choose_tokens`),
prompts are left-padded with position ids that restart at 0 on the first real token and an attention mask
hiding the padding, and the choice of a token uses only that row's logits.
So the same (prompt, seed) gives the same completion whatever the batch size or the other prompts in the
batch (tests/trainer/test_sampling.py checks this at batch sizes 1, 7 and 64).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from trainer.policy.noise import gumbel, id_salts, row_keys, token_salts
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
    check_every: int = 8,
) -> list[list[int]]:
    """Completion token ids per prompt, ending with <eos> when the model emitted it within the budget.

    Everything stays on the model's device: the host looks at the batch every `check_every` tokens (to stop
    once every row is done) and once at the end."""
    import torch

    if len(prompts) != len(seeds):
        raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds: one seed per prompt")
    if not prompts:
        return []
    plan = _Plan(temperature, top_p, max_new_tokens, tokenizer.eos_id, tokenizer.pad_id, max(1, check_every))
    encoded = {p: [tokenizer.bos_id, *tokenizer.encode(p)] for p in dict.fromkeys(prompts)}  # once per prompt
    prompt_ids = [encoded[p] for p in prompts]
    blocks = _cpu_blocks(model, len(prompts))
    threads, was_training = torch.get_num_threads(), model.training
    model.eval()
    try:
        if len(blocks) == 1:
            return _generate_block(model, prompt_ids, seeds, plan)
        return _generate_in_threads(model, prompt_ids, seeds, plan, blocks)
    finally:
        torch.set_num_threads(threads)
        model.train(was_training)


def _cpu_blocks(model: Any, rows: int) -> list[range]:
    """The rows split into one contiguous block per CPU thread torch would use; a single block on an
    accelerator, or with one thread.

    A decode step's matmuls are small (one token per row), and two OpenMP threads splitting each of them
    spend much of their time waiting on each other: at the bench's shapes (64 rows, 2 cores) 2 threads decode
    only 1.35x as fast as 1. Independent blocks of rows, each decoded by its own thread with one intra-op
    thread, keep every core on its own matmuls (1.5x). Rows are independent (batch invariance), so the
    completions are the same whatever the split."""
    import torch

    threads = torch.get_num_threads()
    if model_device(model).type != "cpu" or threads < 2 or rows < 2:
        return [range(rows)]
    n = min(threads, rows)
    bounds = [rows * k // n for k in range(n + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:], strict=False)]


def _generate_in_threads(
    model: Any, prompt_ids: list[list[int]], seeds: list[int], plan: _Plan, blocks: list[range]
) -> list[list[int]]:
    """Each block of rows generated in its own thread with one intra-op thread (torch ops release the GIL),
    concatenated in row order. The caller restores its own thread count afterwards.

    An interrupt (Ctrl-C, a launcher's SIGTERM turned into an exception) reaches this thread only; the
    blocks then stop at their next check instead of finishing the rollout before the caller can clean up."""
    from concurrent.futures import ThreadPoolExecutor

    import torch

    abandon = threading.Event()
    plan = replace(plan, abandon=abandon)

    def block(rows: range) -> list[list[int]]:
        torch.set_num_threads(1)  # OpenMP's thread count is per thread: set it in the one that computes
        return _generate_block(model, prompt_ids[rows.start : rows.stop], seeds[rows.start : rows.stop], plan)

    pool = ThreadPoolExecutor(max_workers=len(blocks))
    try:
        futures = [pool.submit(block, rows) for rows in blocks]
        parts = [f.result() for f in futures]
    except BaseException:
        abandon.set()
        raise
    finally:
        pool.shutdown(wait=True)
    return [ids for part in parts for ids in part]


def _generate_block(model: Any, prompt_ids: list[list[int]], seeds: list[int], plan: _Plan) -> list[list[int]]:
    """`generate_ids` of one batch of encoded prompts, in the calling thread, on a model in eval mode."""
    import torch

    device = model_device(model)
    index = {p: i for i, p in enumerate(dict.fromkeys(map(tuple, prompt_ids)))}  # a GRPO group shares one
    distinct = [list(p) for p in index]  # prefilled once each
    rows = torch.tensor([index[tuple(p)] for p in prompt_ids] if len(distinct) < len(prompt_ids) else [], device=device)
    input_ids, attention = _left_pad(distinct, plan.pad_id)
    with torch.inference_mode():  # thread-local: entered in the thread that samples
        keys = row_keys(seeds, device)
        out = _decode_loop(model, input_ids.to(device), attention.to(device), keys, plan, rows)
    return [_until_eos(row, plan.eos_id) for row in out.tolist()]


@dataclass(frozen=True)
class _Plan:
    temperature: float
    top_p: float
    max_new_tokens: int
    eos_id: int
    pad_id: int
    check_every: int
    abandon: threading.Event | None = None  # set: the caller has gone (an interrupt); stop at the next check


def model_device(model: Any) -> torch.device:
    """Where the model's weights live (its inputs and the sampler's tensors go there)."""
    return next(model.parameters()).device  # type: ignore[no-any-return]


def _left_pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
        mask[i, width - len(s) :] = 1
    return ids, mask


BLOCK = 256  # vocabulary block of the two-stage draw: ~sqrt(V) at V = 49152, so both stages are small


def choose_tokens(
    logits: torch.Tensor, keys: torch.Tensor, position: int, temperature: float, top_p: float
) -> torch.Tensor:
    """Next token per row from logits [B, V], for new-token `position` of rows with noise keys [B]; temperature
    0 is greedy. Row-wise only, on the logits' device. -> [B].

    The Gumbel-max trick (argmax(log p + G) samples from p exactly) in two stages, so that hashed noise is
    drawn for 2 * sqrt(V) numbers per row instead of V: a block of BLOCK tokens from the blocks' masses
    (logsumexp), then a token within that block. p(block) * p(token | block) = p(token)."""
    import torch

    if temperature == 0.0:
        return logits.argmax(dim=-1)
    scores = logits.float()  # [B, V]: log p up to a per-row constant, which argmax ignores
    if temperature != 1.0:  # x / 1.0 is x: skip a pass over [B, V] and its fresh memory at every token
        scores = scores / temperature
    if top_p < 1.0:
        scores = _top_p_filter(torch.log_softmax(scores, dim=-1), top_p)
    batch, vocab = scores.shape
    blocks = -(-vocab // BLOCK)
    if blocks * BLOCK != vocab:
        scores = torch.nn.functional.pad(scores, (0, blocks * BLOCK - vocab), value=float("-inf"))
    by_block = scores.view(batch, blocks, BLOCK)  # [B, nb, S]
    block_salts = token_salts(blocks, scores.device, domain=1)  # [nb]
    block = (torch.logsumexp(by_block, dim=-1) + gumbel(keys, position, block_salts)).argmax(dim=-1)  # [B]
    within = by_block.gather(1, block[:, None, None].expand(batch, 1, BLOCK)).squeeze(1)  # [B, S]
    first = block * BLOCK  # [B]
    ids = first[:, None] + torch.arange(BLOCK, device=scores.device)  # [B, S]: the block's token ids
    return first + (within + gumbel(keys, position, id_salts(ids))).argmax(dim=-1)


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
    model: Any, input_ids: torch.Tensor, attention: torch.Tensor, keys: torch.Tensor, plan: _Plan, rows: torch.Tensor
) -> torch.Tensor:
    """Prefill the distinct prompts [U, W], then one token per step for each of the B rows (row r continues
    prompt rows[r]; no `rows`: row r is prompt r) into a preallocated [B, T] buffer (pad after a row's <eos>),
    with a static KV cache and a preallocated mask. -> the buffer, on the device."""
    import torch

    _, width = input_ids.shape
    device = input_ids.device
    cache, cache_arg = _static_cache(model, width + plan.max_new_tokens), cache_keyword(model)
    if len(rows) and (cache is None or not hasattr(cache, "reorder_cache")):
        input_ids, attention, rows = input_ids[rows], attention[rows], rows[:0]  # no cache to share: prefill all
    steps = plan.max_new_tokens

    def forward(ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        given = {cache_arg: cache} if cache_arg else {}
        res = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1, **given)
        return res.logits[:, -1, :]  # type: ignore[no-any-return]

    step_pos = (attention.cumsum(-1) - 1).clamp(min=0)
    logits = forward(input_ids, attention, step_pos)  # the prefill
    if len(rows):  # each distinct prompt's keys, values and next-token logits, out to its rows
        cache.reorder_cache(rows)
        logits, attention, step_pos = logits[rows], attention[rows], step_pos[rows]
    batch = len(attention)
    mask = torch.cat([attention, torch.ones((batch, steps), dtype=attention.dtype, device=device)], dim=1)
    out = torch.full((batch, steps), plan.pad_id, dtype=torch.long, device=device)
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    step_pos = step_pos[:, -1:]
    for t in range(steps):
        if t:
            step_pos = step_pos + 1
            logits = forward(out[:, t - 1 : t], mask[:, : width + t], step_pos)
        tokens = choose_tokens(logits, keys, t, plan.temperature, plan.top_p)
        tokens = tokens.masked_fill(done, plan.pad_id)
        out[:, t] = tokens
        done |= tokens == plan.eos_id
        if (t + 1) % plan.check_every == 0 and (bool(done.all()) or _abandoned(plan)):  # the only host sync
            break
    return out


def _abandoned(plan: _Plan) -> bool:
    return plan.abandon is not None and plan.abandon.is_set()


def _until_eos(row: list[int], eos_id: int) -> list[int]:
    return row[: row.index(eos_id) + 1] if eos_id in row else row


def _static_cache(model: Any, length: int) -> Any:
    """A KV cache allocated once for `length` positions (no per-token growth), or None for a model that is
    not a transformers model (the forward then makes its own)."""
    config = getattr(model, "config", None)
    if config is None:
        return None
    from transformers import StaticCache

    return StaticCache(config=config, max_cache_len=length)


def cache_keyword(model: Any) -> str | None:
    """The forward's KV-cache keyword: `cache` in transformers 5, `past_key_values` in older versions (vLLM's
    venv); None for a forward that takes neither."""
    import inspect

    params = inspect.signature(model.forward).parameters
    return next((name for name in ("cache", "past_key_values") if name in params), None)
