import math
import threading
from dataclasses import replace

import pytest
import torch

from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.policy.noise import gumbel, row_keys, token_salts
from trainer.policy.sampling import choose_tokens, generate, sample_seed
from trainer.policy.task import validation_tasks


@pytest.fixture(scope="module")
def model_tok():
    cfg = ModelConfig()
    return build_model(cfg), build_tokenizer(cfg)


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.1, 0.95)])
def test_batch_invariant_for_batch_sizes_1_7_64(model_tok, temperature, top_p):
    model, tok = model_tok
    tasks = validation_tasks()[:64]
    prompts = [t.prompt for t in tasks]
    seeds = [sample_seed(0, i, 0) for i in range(64)]
    kw = dict(temperature=temperature, top_p=top_p, max_new_tokens=5)
    whole = generate(model, tok, prompts, seeds=seeds, **kw)
    for bs in (1, 7):
        parts = []
        for i in range(0, 64, bs):
            parts += generate(model, tok, prompts[i : i + bs], seeds=seeds[i : i + bs], **kw)
        assert parts == whole
    # Batch composition: a prompt among different neighbours (different padding) gives the same completion.
    mixed = generate(model, tok, ["1+1=", prompts[5], "99+99="], seeds=[1, seeds[5], 2], **kw)
    assert mixed[1] == whole[5]
    # Random weights at temperature 1 do produce variety, so the comparison above is not vacuous.
    if temperature == 1.0:
        assert len(set(whole)) > 10


def test_same_prompt_different_seeds_differ(model_tok):
    model, tok = model_tok
    out = generate(model, tok, ["3+4="] * 16, temperature=1.0, top_p=1.0, max_new_tokens=4, seeds=list(range(16)))
    assert len(set(out)) > 1


def test_two_stage_gumbel_max_matches_distribution():
    keys = row_keys(list(range(20000)), "cpu")
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]])).repeat(20000, 1)
    freq = torch.bincount(choose_tokens(logits, keys, 3, 1.0, 1.0), minlength=3).double() / 20000
    assert torch.allclose(freq, torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64), atol=0.015)
    # top_p 0.6 keeps {0.5, 0.3}: the 0.2 token never appears; temperature 0 is argmax.
    assert (choose_tokens(logits, keys, 3, 1.0, 0.6) != 2).all()
    assert (choose_tokens(logits, keys, 3, 0.0, 1.0) == 0).all()
    # Several vocabulary blocks (BLOCK = 256): mass 0.4 / 0.3 / 0.2 on ids 0, 300, 599, the rest sharing 0.1.
    probs = torch.full((600,), 0.1 / 597)
    probs[[0, 300, 599]] = torch.tensor([0.4, 0.3, 0.2])
    picks = choose_tokens(torch.log(probs).repeat(20000, 1), keys, 5, 1.0, 1.0)
    freq = torch.bincount(picks, minlength=600).double() / 20000
    assert torch.allclose(freq[[0, 300, 599]], torch.tensor([0.4, 0.3, 0.2], dtype=torch.float64), atol=0.015)
    assert abs(float(freq.sum() - freq[[0, 300, 599]].sum()) - 0.1) < 0.01
    assert len(set(picks.tolist())) > 400  # the rest of the mass is spread over the other ids, in every block


def test_hashed_noise_is_gumbel_and_stateless():
    keys, salts = row_keys([sample_seed(0, i) for i in range(64)], "cpu"), token_salts(1000, "cpu")
    g = gumbel(keys, 0, salts)  # [64, 1000]
    assert g.shape == (64, 1000) and g.dtype == torch.float32
    assert abs(float(g.mean()) - 0.5772) < 0.01  # Euler-Mascheroni: the Gumbel(0, 1) mean
    assert abs(float(g.var()) - torch.pi**2 / 6) < 0.03
    # A row's noise is a function of (seed, position, token) only: not of its neighbours or of the vocab size.
    assert torch.equal(gumbel(keys[5:6], 0, salts), g[5:6])
    assert torch.equal(gumbel(keys, 0, token_salts(10, "cpu")), g[:, :10])
    assert not torch.equal(gumbel(keys, 1, salts), g)  # positions differ
    # The extreme hashes give finite noise (float32 rounds 2**24 - 0.5 up to 2**24: u = 1, an infinite draw).
    many = gumbel(row_keys(list(range(512)), "cpu"), 0, token_salts(1 << 15, "cpu"))  # 2**24 draws
    assert bool(torch.isfinite(many).all())
    # The int32 tensor hash equals murmur3's fmix32 written with Python integers (so no device can differ).
    seed = sample_seed(7)
    got = gumbel(row_keys([seed], "cpu"), 2, token_salts(3, "cpu"))[0].double()
    assert torch.allclose(
        got, torch.tensor([_reference_gumbel(seed, 2, v) for v in range(3)], dtype=torch.float64), atol=1e-5
    )


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _reference_gumbel(seed: int, position: int, token: int) -> float:
    key = _fmix32(_fmix32(((seed >> 32) & 0xFFFFFFFF) ^ 0x9E3779B1) ^ (seed & 0xFFFFFFFF))
    step_key = _fmix32(key ^ _fmix32(position ^ 0xC2B2AE35))
    h = _fmix32(step_key ^ ((token * 0x9E3779B1) & 0xFFFFFFFF))
    u = ((h >> 9) + 0.5) / (1 << 23)
    return -math.log(-math.log(u))


def test_seed_derivation_is_stable():
    assert sample_seed(0, 1, 2) == sample_seed(0, 1, 2) != sample_seed(0, 2, 1)
    assert 0 <= sample_seed("x") < 2**63


def test_rows_split_over_cpu_threads_sample_what_one_thread_samples(model_tok):
    """On the CPU each torch thread decodes its own block of rows; the completions must not depend on it."""
    model, tok = model_tok
    prompts = [t.prompt for t in validation_tasks()[:7]]
    seeds = [sample_seed(1, i, 0) for i in range(7)]
    kw = dict(temperature=1.0, top_p=1.0, max_new_tokens=6, seeds=seeds)
    before, was_training = torch.get_num_threads(), model.training
    try:
        torch.set_num_threads(1)
        alone = generate(model, tok, prompts, **kw)
        torch.set_num_threads(3)  # blocks of 2, 2 and 3 rows
        model.train()
        assert generate(model, tok, prompts, **kw) == alone
        assert torch.get_num_threads() == 3 and model.training  # the caller's settings are back
    finally:
        torch.set_num_threads(before)
        model.train(was_training)


def test_a_failing_block_stops_the_others_and_reaches_the_caller(model_tok):
    """An error (or Ctrl-C) in one sampling thread or in the caller's: the other blocks stop at their next
    check, the error reaches the caller, and the caller's thread count is back."""
    from trainer.policy.sampling import _generate_block, _Plan

    model, tok = model_tok
    prompts = [t.prompt for t in validation_tasks()[:3]]
    plan = _Plan(1.0, 1.0, 12, tok.eos_id, tok.pad_id, check_every=2, abandon=threading.Event())
    plan.abandon.set()
    ids = [[tok.bos_id, *tok.encode(p)] for p in prompts]

    def tokens(rows):
        return [sum(t != tok.pad_id for t in row) for row in rows]  # the buffer is pad after a stop

    assert max(tokens(_generate_block(model, ids, [1, 2, 3], plan))) <= 2  # abandoned: stops at the first check
    assert max(tokens(_generate_block(model, ids, [1, 2, 3], replace(plan, abandon=None)))) > 2

    def fail_alone(module, args, kwargs):
        if kwargs["input_ids"].shape[0] == 1:  # the block of one row (blocks of 1 and 2 rows)
            raise RuntimeError("block failed")

    hook = model.register_forward_pre_hook(fail_alone, with_kwargs=True)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with pytest.raises(RuntimeError, match="block failed"):
            generate(model, tok, prompts, temperature=1.0, top_p=1.0, max_new_tokens=6, seeds=[1, 2, 3])
        assert torch.get_num_threads() == 2
    finally:
        hook.remove()
        torch.set_num_threads(before)
