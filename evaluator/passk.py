"""pass@k and the per-sample seeds it is computed with. Pure functions, no torch.

Each sample's seed is a function of (task index, sample index) only, so the completions, and therefore
the score, do not depend on how samples are batched or split across workers (nanochat's rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import comb, fsum

from trainer.policy.sampling import sample_seed as _seed  # hashlib only at import time; torch stays lazy

SEED_DOMAIN = "eval"


def sample_seed(task_index: int, sample_index: int) -> int:
    """The 63-bit seed of sample `sample_index` of validation task `task_index`, in the trainer's scheme."""
    return _seed(SEED_DOMAIN, task_index, sample_index)


def sample_plan(task_indices: Sequence[int], k: int) -> list[tuple[int, int]]:
    """(task index, sample index) for every sample, task-major: [len(task_indices) * k]."""
    return [(t, j) for t in task_indices for j in range(k)]


def pass_at_k_task(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with `c` correct among `n` samples: 1 - C(n-c, k) / C(n, k).

    With n == k (the benchmark's setting) this is 1.0 if any sample is correct, else 0.0.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_at_k(correct: Sequence[Sequence[bool]], k: int) -> float:
    """Mean pass@k over tasks; `correct[t]` holds the n >= k sample outcomes of task t.

    Summed with math.fsum in task order, so the value is the same bits whatever produced the outcomes.
    """
    if not correct:
        raise ValueError("pass@k of no tasks")
    return fsum(pass_at_k_task(len(c), sum(c), k) for c in correct) / len(correct)
