"""GRPO maths against hand-computed values."""

import pytest
import torch

from trainer.learning.grpo import build_batch, clipped_policy_loss, group_advantages, slice_batch, token_logprobs


def test_group_advantages_hand_computed():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # 2 prompts x 4 generations
    adv = group_advantages(rewards, 4, eps=1e-9)
    # group 1: mean 0.5, population std 0.5 -> +1 / -1; group 2: all equal -> 0 (no signal)
    assert adv.tolist()[:4] == pytest.approx([1.0, -1.0, -1.0, 1.0])
    assert adv.tolist()[4:] == [0.0] * 4
    assert adv.shape == rewards.shape


def test_group_advantages_eps_keeps_uniform_groups_finite():
    adv = group_advantages(torch.zeros(6), 3)
    assert torch.equal(adv, torch.zeros(6))


def test_clipped_loss_hand_computed():
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    old = torch.zeros(2, 2)
    logp = torch.log(torch.tensor([[1.5, 0.9], [0.5, 7.0]]))  # ratios
    adv = torch.tensor([1.0, -2.0])
    # row 0 (A=+1): min(1.5, 1.2) = 1.2; min(0.9, 0.9) = 0.9 -> loss -(1.2 + 0.9)
    # row 1 (A=-2): min(0.5*-2, 0.8*-2) = -1.6 -> loss +1.6 ; masked token ignored
    loss = clipped_policy_loss(logp, old, adv, mask, 0.2, total_tokens=3)
    assert float(loss) == pytest.approx((-(1.2 + 0.9) + 1.6) / 3)


def test_on_policy_gradient_is_advantage_weighted_logprob_gradient():
    logits = torch.randn(3, 2, 5, requires_grad=True)
    targets = torch.randint(0, 5, (3, 2))
    mask = torch.ones(3, 2)
    adv = torch.tensor([1.0, -0.5, 2.0])
    logp = token_logprobs(logits, targets)
    clipped_policy_loss(logp, logp.detach(), adv, mask, 0.2, total_tokens=6).backward()
    g1 = logits.grad.clone()
    logits.grad = None
    (-(token_logprobs(logits, targets) * adv[:, None]).sum() / 6).backward()
    assert torch.allclose(g1, logits.grad)


def test_build_batch_masks_only_completion_and_micro_batches_add_up():
    batch = build_batch([[1, 5, 6], [1, 7]], [[8, 2], [9, 10, 2]], pad_id=0)
    # row 0: seq 1 5 6 8 2 -> inputs 1 5 6 8, targets 5 6 8 2, completion targets are 8, 2
    assert batch.inputs[0].tolist() == [1, 5, 6, 8]
    assert batch.targets[0].tolist() == [5, 6, 8, 2]
    assert batch.mask[0].tolist() == [0, 0, 1, 1]
    # row 1: seq 1 7 9 10 2 -> targets 7 9 10 2, completion 9 10 2
    assert batch.mask[1].tolist() == [0, 1, 1, 1]
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 11, requires_grad=True)
    adv = torch.tensor([0.7, -1.3])
    total = int(batch.mask.sum())

    def loss(b, a, lg):
        lp = token_logprobs(lg, b.targets)
        return clipped_policy_loss(lp, lp.detach(), a, b.mask, 0.2, total)

    full = loss(batch, adv, logits).detach()
    parts = sum(loss(slice_batch(batch, i, i + 1), adv[i : i + 1], logits[i : i + 1]).detach() for i in range(2))
    assert float(full) == pytest.approx(float(parts))
