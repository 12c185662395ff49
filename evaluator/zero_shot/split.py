"""One checkpoint's lm-eval requests split across N local processes (`--nproc`, the seed's NPROC_PER_NODE):
each process loads the checkpoint once (on `cuda:i` when scoring on CUDA) and scores a contiguous share of
each call's requests; the shares are put back in request order. Every request is scored on its own row
(evaluator/harness/loglik.py), so the scores do not depend on N."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluator.zero_shot.job import Job

_LOADED: dict[str, Any] = {}  # in each process: its model and tokenizer


def shares(items: list[Any], n: int) -> list[list[Any]]:
    """`items` in at most n contiguous shares of sizes differing by at most one (none empty)."""
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (i < extra)
        if end > start:
            out.append(items[start:end])
        start = end
    return out


@contextmanager
def split_compute(job: Job, device: str, n: int) -> Iterator[Any]:
    """A `compute(method, requests, batch_size)` for CheckpointLM that runs on n processes of their own."""
    context = multiprocessing.get_context("spawn")
    slots = context.Queue()
    for i in range(n):
        slots.put(f"cuda:{i}" if device == "cuda" else device)
    with ProcessPoolExecutor(n, mp_context=context, initializer=_load, initargs=(job, slots)) as pool:

        def compute(method: str, requests: list[Any], batch_size: int) -> list[Any]:
            parts = pool.map(_compute, [(method, share, batch_size) for share in shares(requests, n)])
            return [result for part in parts for result in part]

        yield compute


def _load(job: Job, slots: Any) -> None:
    import torch

    from evaluator.zero_shot.loading import build, read

    torch.set_num_threads(1)
    weights = read(job.info, tokenizer=job.tokenizer)
    device = slots.get()
    _LOADED["model"] = build(weights, dtype=job.dtype, device=device, code=job.code, capacity=job.capacity)
    _LOADED["tokenizer"] = weights.tokenizer


def _compute(work: tuple[str, list[Any], int]) -> list[Any]:
    from evaluator.harness import loglik

    method, requests, batch_size = work
    return list(loglik.METHODS[method](_LOADED["model"], _LOADED["tokenizer"], requests, batch_size=batch_size))
