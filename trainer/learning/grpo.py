"""GRPO maths as small pure functions (shapes in comments). The loop in `loop.py` only calls these.

B prompts x G generations = N sequences of T tokens, V the vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def group_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-4) -> torch.Tensor:
    """rewards [B*G] (grouped: prompt b's samples are b*G .. b*G+G-1) -> advantages [B*G]:
    (r - group mean) / (group std + eps). A group whose samples all score the same gets 0 (no signal)."""
    groups = rewards.view(-1, group_size)  # [B, G]
    mean = groups.mean(dim=1, keepdim=True)  # [B, 1]
    std = groups.std(dim=1, keepdim=True, unbiased=False)  # [B, 1]
    return ((groups - mean) / (std + eps)).reshape(-1)  # [B*G]


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor, chunk: int = 8) -> torch.Tensor:
    """logits [N, T, V], targets [N, T] -> log p(target) [N, T] in float32: the target's logit minus the
    row's logsumexp, `chunk` sequences at a time, so no [N, T, V] log-softmax (nor float32 copy of bf16
    logits) is ever materialised."""
    import torch

    parts = []
    for start in range(0, logits.shape[0], chunk):
        rows = logits[start : start + chunk].float()  # [c, T, V]
        picked = rows.gather(-1, targets[start : start + chunk].unsqueeze(-1)).squeeze(-1)  # [c, T]
        parts.append(picked - torch.logsumexp(rows, dim=-1))
    return torch.cat(parts)


def clipped_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float,
    total_tokens: int,
) -> torch.Tensor:
    """PPO-style clipped surrogate summed over completion tokens, divided by the global batch's token count
    (so micro-batch losses add up to the global-batch mean: gradient accumulation is exact).

    logp, old_logp, mask [N, T]; advantages [N] -> scalar.
    """
    import torch

    ratio = torch.exp(logp - old_logp)  # [N, T]
    adv = advantages.unsqueeze(-1)  # [N, 1]
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    per_token = -torch.minimum(unclipped, clipped)  # [N, T]
    return (per_token * mask).sum() / max(1, total_tokens)


@dataclass(frozen=True)
class Batch:
    """Right-padded training sequences: inputs/targets/mask [N, T] (mask: 1 on completion tokens)."""

    inputs: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor

    def to(self, device: torch.device) -> Batch:
        """The same batch on `device`."""
        return Batch(self.inputs.to(device), self.targets.to(device), self.mask.to(device))


def build_batch(prompt_ids: list[list[int]], completion_ids: list[list[int]], pad_id: int) -> Batch:
    """Sequences prompt+completion (prompt ids include <bos>); loss only on completion tokens."""
    import torch

    seqs = [p + c for p, c in zip(prompt_ids, completion_ids, strict=True)]
    width = max(len(s) for s in seqs) - 1
    inputs = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    targets = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width))
    for i, (p, s) in enumerate(zip(prompt_ids, seqs, strict=True)):
        n = len(s) - 1
        inputs[i, :n] = torch.tensor(s[:-1])
        targets[i, :n] = torch.tensor(s[1:])
        mask[i, len(p) - 1 : n] = 1.0  # target positions that are completion tokens
    return Batch(inputs, targets, mask)


def slice_batch(batch: Batch, start: int, stop: int) -> Batch:
    """Rows start..stop of a batch (a micro-batch)."""
    return Batch(batch.inputs[start:stop], batch.targets[start:stop], batch.mask[start:stop])
