"""The policy update of one GRPO step: the rollout batch in `updates` mini-batches, one optimizer step each.

With one update (TRL's default) the sampling policy is the policy being trained, the ratio is 1 and the clip
never acts. With several (verl's `ppo_mini_batch_size`, DAPO's 3 per rollout batch) each sample still
counts once, the model takes `updates` optimizer steps per rollout batch, and from the second mini-batch on
the ratio is taken against the log-probs the sampling weights gave: computed before the first step, without
gradients, which is what makes the clip bound the drift.

Mini-batch u holds the groups (prompts) g with g % updates == u. Strided rather than contiguous so that
data-parallel ranks, each holding a contiguous block of the prompts (trainer/parallel/distributed.py), together
form the single process's mini-batches: the same global batch gives the same updates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainer.learning.grpo import Batch, clipped_policy_loss, slice_batch
from trainer.learning.shared_prompt import completion_logprobs

if TYPE_CHECKING:
    from trainer.parallel.distributed import Ranks


@dataclass(frozen=True)
class UpdateStats:
    loss: float  # this rank's part of the mean over mini-batches of the global mini-batch's token-mean loss
    grad_norm: float  # mean over the mini-batches of the global gradient norm before clipping
    tokens: int  # completion tokens of the global batch (every rank's)


def mini_batch_rows(rows: int, group_size: int, updates: int) -> list[list[int]]:
    """The rows of each mini-batch: groups g with g % updates == u, in order (rows of a group stay together)."""
    groups = rows // group_size
    return [[g * group_size + i for g in range(u, groups, updates) for i in range(group_size)] for u in range(updates)]


def policy_update(
    model: Any,
    optimizer: Any,
    batch: Batch,
    advantages: Any,
    *,
    group_size: int,
    updates: int,
    micro_batch_size: int,
    clip_epsilon: float,
    grad_clip_norm: float,
    ranks: Ranks | None = None,
    sync_gradients: Callable[..., None] | None = None,
) -> UpdateStats:
    """`updates` optimizer steps over the mini-batches of `batch` [N, T] (advantages [N], computed over the
    whole batch's groups before the split). Under data parallelism (`ranks`) each mini-batch's loss is
    normalised by the tokens of every rank's share of it, so the ranks' gradients sum to one process's, and
    `sync_gradients(last=...)` runs before each backward (the trainer reduces over the ranks on the last
    micro-batch of each optimizer step only)."""
    import torch

    from trainer.parallel.distributed import Ranks

    ranks = ranks or Ranks()
    model.train()
    index = [torch.tensor(r, device=advantages.device) for r in mini_batch_rows(len(advantages), group_size, updates)]
    minis = [_rows(batch, i) for i in index]
    advs = [advantages[i] for i in index]
    local = [float(m.mask.sum()) for m in minis]
    tokens = [int(t) for t in ranks.sum([*local, sum(local)])]  # one host sync, one all-reduce
    old = [None] + [_sampling_logprobs(model, m, micro_batch_size) for m in minis[1:]]
    losses, norms = [], []
    for mini, adv, old_mini, mini_tokens in zip(minis, advs, old, tokens, strict=False):
        optimizer.zero_grad(set_to_none=True)
        loss_sum: Any = 0.0
        for start in range(0, len(mini.inputs), micro_batch_size):
            mb = slice_batch(mini, start, start + micro_batch_size)
            n = len(mb.inputs)
            mb_adv = adv[start : start + n]
            # The first mini-batch is scored by the very weights that sampled it: its old log-probs are logp,
            # so its ratio is 1 and the loss's gradient is known before the forward.
            hint = None if old_mini is not None else _first_gradient(mb_adv, mb.mask, clip_epsilon, mini_tokens, ranks)
            logp = completion_logprobs(model, mb, hint)  # [M, T]
            old_logp = logp.detach() if old_mini is None else old_mini[start : start + n]
            loss = clipped_policy_loss(logp, old_logp, mb_adv, mb.mask, clip_epsilon, mini_tokens)
            # FSDP averages the ranks' gradients; each rank's loss is its part of the global loss: undo the mean.
            if sync_gradients is not None:
                sync_gradients(last=start + micro_batch_size >= len(mini.inputs))
            (loss * ranks.world_size).backward()
            loss_sum += loss.detach()  # summed on the device: no host sync per micro-batch
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip_norm)
        norms.append(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)  # sharded: a DTensor
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)  # not needed again before the next backward: free them meanwhile
        losses.append(loss_sum)
    return UpdateStats(loss=float(sum(losses)) / updates, grad_norm=float(sum(norms)) / updates, tokens=tokens[-1])


def _first_gradient(adv: Any, mask: Any, clip_epsilon: float, tokens: int, ranks: Ranks) -> Any:
    """d(loss * world size)/d logp [M, T] for a micro-batch whose old log-probs are its log-probs: the ratio is
    exp(0) = 1 whatever they are, so the same ops on zeros give the gradient the backward will bring."""
    import torch

    with torch.enable_grad():
        logp = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device, requires_grad=True)
        loss = clipped_policy_loss(logp, logp.detach(), adv, mask, clip_epsilon, tokens) * ranks.world_size
        return torch.autograd.grad(loss, logp)[0]


def _rows(batch: Batch, index: Any) -> Batch:
    """The rows `index` [R] of a batch."""
    return Batch(batch.inputs[index], batch.targets[index], batch.mask[index])


def _sampling_logprobs(model: Any, batch: Batch, micro_batch_size: int) -> Any:
    """log p(target) [N, T] under the current (sampling) weights, without gradients."""
    import torch

    with torch.no_grad():
        parts = [
            completion_logprobs(model, slice_batch(batch, s, s + micro_batch_size))
            for s in range(0, len(batch.inputs), micro_batch_size)
        ]
    return torch.cat(parts)
