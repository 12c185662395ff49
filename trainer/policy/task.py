"""The built-in verifiable task: two-number addition `a+b=` with a, b in 0..99 and an exact-answer reward.

The 10,000 problems are split by the SHA-256 of their prompt text, so the split depends on no RNG and no
Python version: the 251 smallest digests are the validation set (fixed forever), the next 256 the dev set
(used only to stop the warm-up), 32 more the fingerprint holdout, and the rest is the training pool.
"""

from __future__ import annotations

import functools
import hashlib
import random
from dataclasses import dataclass

N_VALIDATION = 251
N_DEV = 256
N_HOLDOUT = 32


@dataclass(frozen=True)
class Task:
    """One problem: the prompt the model sees and the exact answer it must produce."""

    prompt: str
    answer: str


def _digest(task: Task) -> str:
    return hashlib.sha256(task.prompt.encode()).hexdigest()


@functools.cache
def _ordered() -> tuple[Task, ...]:
    tasks = [Task(f"{a}+{b}=", str(a + b)) for a in range(100) for b in range(100)]
    return tuple(sorted(tasks, key=_digest))


def validation_tasks() -> list[Task]:
    """The 251 validation tasks (disjoint from training, dev and holdout)."""
    return list(_ordered()[:N_VALIDATION])


def dev_tasks() -> list[Task]:
    """Tasks for the warm-up's calibrated stop; never the validation set."""
    return list(_ordered()[N_VALIDATION : N_VALIDATION + N_DEV])


def holdout_texts() -> list[str]:
    """Fixed full texts ('prompt' + 'answer') whose mean log-likelihood fingerprints a checkpoint."""
    start = N_VALIDATION + N_DEV
    return [t.prompt + t.answer for t in _ordered()[start : start + N_HOLDOUT]]


def training_pool() -> list[Task]:
    """Every task not in validation, dev or holdout."""
    return list(_ordered()[N_VALIDATION + N_DEV + N_HOLDOUT :])


def training_tasks(seed: int, step: int, n: int) -> list[Task]:
    """The `n` prompts of training step `step` (1-based) for run seed `seed`: a function of (seed, step) only."""
    pool = training_pool()
    rng = random.Random(f"train:{seed}:{step}")  # str seeds hash with SHA-512: stable across versions
    return [pool[rng.randrange(len(pool))] for _ in range(n)]


def warmup_tasks(seed: int, batch: int, n: int) -> list[Task]:
    """The `n` supervised examples of warm-up batch `batch` (separate stream from training_tasks)."""
    pool = training_pool()
    rng = random.Random(f"warmup:{seed}:{batch}")
    return [pool[rng.randrange(len(pool))] for _ in range(n)]


def reward(task: Task, completion: str) -> float:
    """1.0 when the completion is exactly the answer (surrounding whitespace ignored), else 0.0."""
    return 1.0 if completion.strip() == task.answer else 0.0
