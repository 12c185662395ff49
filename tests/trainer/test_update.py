"""The policy update in mini-batches: each sample once, one optimizer step per mini-batch, and the ratio
taken against the weights that sampled the batch (so the clip acts from the second mini-batch on)."""

import pytest
import torch

from trainer.config import load_config
from trainer.errors import ConfigError
from trainer.learning.grpo import Batch, build_batch, clipped_policy_loss, token_logprobs
from trainer.learning.update import mini_batch_rows, policy_update
from trainer.policy.model import ModelConfig, build_model

SMALL = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
HALVES = ([0, 1, 4, 5], [2, 3, 6, 7])  # 4 groups of 2: groups 0 and 2, then groups 1 and 3


def _batch():
    g = torch.Generator().manual_seed(0)
    prompts = [[1, *torch.randint(3, 19, (3,), generator=g).tolist()] for _ in range(8)]
    completions = [torch.randint(3, 19, (1 + i % 3,), generator=g).tolist() for i in range(8)]
    return build_batch(prompts, completions, pad_id=0), torch.randn(8, generator=g)


def _rows(batch, rows):
    return Batch(batch.inputs[rows], batch.targets[rows], batch.mask[rows])


def _optimizer(model):
    # SGD: linear in the gradient, so summation-order noise stays noise (Adam's first step is sign(gradient)).
    # Large steps, so the second mini-batch's ratio moves away from 1.
    return torch.optim.SGD(model.parameters(), lr=2.0)


def _update(model, opt, batch, adv, updates):
    return policy_update(
        model, opt, batch, adv, group_size=2, updates=updates, micro_batch_size=2, clip_epsilon=0.2, grad_clip_norm=1.0
    )


def test_mini_batches_are_strided_whole_groups():
    assert mini_batch_rows(8, 2, 2) == list(HALVES)
    assert mini_batch_rows(6, 3, 1) == [[0, 1, 2, 3, 4, 5]]
    # 16 prompts on 2 data-parallel ranks (8 each), 4 updates: rank r's mini-batch u, in global prompts, is
    # the single process's mini-batch u split between the ranks.
    one = [{row // 16 for row in rows} for rows in mini_batch_rows(16 * 16, 16, 4)]
    ranks = [[{8 * r + row // 16 for row in rows} for rows in mini_batch_rows(8 * 16, 16, 4)] for r in (0, 1)]
    assert [a | b for a, b in zip(*ranks, strict=True)] == one


def test_mini_batches_step_once_each_against_the_sampling_log_probs():
    batch, adv = _batch()
    model, reference = build_model(SMALL), build_model(SMALL)
    reference.load_state_dict(model.state_dict())
    stats = _update(model, _optimizer(model), batch, adv, updates=2)

    # The same update written out: old log-probs of the second half before any step, then one step per half.
    opt = _optimizer(reference)
    with torch.no_grad():
        second = _rows(batch, HALVES[1])
        old = token_logprobs(reference(input_ids=second.inputs).logits, second.targets)
    for half, rows in enumerate(HALVES):
        mb = _rows(batch, rows)
        logp = token_logprobs(reference(input_ids=mb.inputs).logits, mb.targets)
        sampled = logp.detach() if half == 0 else old
        opt.zero_grad()
        clipped_policy_loss(logp, sampled, adv[rows], mb.mask, 0.2, int(mb.mask.sum())).backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
        opt.step()
    for (name, a), b in zip(model.state_dict().items(), reference.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=name)
    assert stats.grad_norm > 0 and stats.tokens == int(batch.mask.sum())


def test_ratio_against_current_weights_would_differ():
    """The check above can fail: scoring the second half against the already-updated weights (ratio 1) moves
    the weights elsewhere."""
    batch, adv = _batch()
    model, naive = build_model(SMALL), build_model(SMALL)
    naive.load_state_dict(model.state_dict())
    _update(model, _optimizer(model), batch, adv, updates=2)
    opt = _optimizer(naive)
    for rows in HALVES:
        _update(naive, opt, _rows(batch, rows), adv[rows], updates=1)
    assert any(not torch.equal(a, b) for a, b in zip(model.parameters(), naive.parameters(), strict=True))


def test_updates_must_split_the_prompts_into_equal_mini_batches():
    assert load_config(sets=["updates_per_rollout=2"]).gradient_accumulation_steps == 2  # 256 / 2 / 64
    prompts = ["num_prompts_per_step=16", "num_generations_per_prompt=16"]
    for bad in ("updates_per_rollout=3", "updates_per_rollout=32", "updates_per_rollout=0"):
        with pytest.raises(ConfigError, match="updates_per_rollout: .* split the 16 prompts of a step"):
            load_config(sets=[*prompts, bad])


def test_the_first_mini_batch_knows_its_loss_gradient_before_the_forward(monkeypatch):
    """With one update, the gradient the loss sends back is the one `_first_gradient` predicted, so the fused
    head never recomputes its logits in the backward (trainer/learning/head_logprobs.py); from the second mini-batch
    on, the ratio is not 1 and nothing is predicted."""
    import trainer.learning.head_logprobs as head

    calls = []
    backward = head._function().backward

    def spy(ctx, grad):
        calls.append("early" if ctx.early is not None and torch.equal(grad, ctx.saved_tensors[4]) else "recomputed")
        return backward(ctx, grad)

    monkeypatch.setattr(head._function(), "backward", staticmethod(spy))
    batch, adv = _batch()
    model = build_model(SMALL)
    _update(model, _optimizer(model), batch, adv, updates=1)
    assert calls and set(calls) == {"early"}
    calls.clear()
    _update(model, _optimizer(model), batch, adv, updates=2)
    assert calls.count("recomputed") == len(calls) // 2  # the second mini-batch's half
