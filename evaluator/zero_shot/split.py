"""One checkpoint's lm-eval requests split across N local processes (`--nproc`, the seed's NPROC_PER_NODE):
each process loads the checkpoint once (on `cuda:i` when scoring on CUDA) and scores a contiguous share of
each call's requests, cut at the batches one process would form; the shares are put back in request order.
So every request is scored in the same batch as unsplit, and each log-likelihood is the same bits for any N."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from evaluator.zero_shot.loading import ModelCode
from recorder.checkpoints.detect import CheckpointInfo
from recorder.checkpoints.tokenizer_files import TokenizerFiles


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringModel:
    """What each process loads: the checkpoint, its tokenizer, and the scoring model's numerics and code."""

    info: CheckpointInfo
    tokenizer: TokenizerFiles  # the bytes the parent read and hashed
    dtype: str
    code: ModelCode
    capacity: bool | None


_LOADED: dict[str, Any] = {}  # in each process: its model and tokenizer


def shares(items: list[Any], n: int, batch: int = 1) -> list[list[Any]]:
    """`items` in at most n contiguous shares, none empty, each a whole number of `batch`-sized batches (the
    last may be short) and their counts within one of each other: every share's batches are the batches one
    process would form, so each request meets the same batch neighbours, padding and kernels as unsplit."""
    batches = [items[i : i + batch] for i in range(0, len(items), batch)]
    size, extra = divmod(len(batches), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (i < extra)
        if end > start:
            out.append([x for b in batches[start:end] for x in b])
        start = end
    return out


@contextmanager
def split_compute(model: ScoringModel, device: str, n: int) -> Iterator[Any]:
    """A `compute(method, requests, batch_size)` for CheckpointLM that runs on n processes of their own."""
    import torch

    threads = torch.get_num_threads()  # the kernels' float order follows it: the children use the driver's
    context = multiprocessing.get_context("spawn")
    slots = context.Queue()
    for i in range(n):
        slots.put(f"cuda:{i}" if device == "cuda" else device)
    with ProcessPoolExecutor(n, mp_context=context, initializer=_load, initargs=(model, slots, threads)) as pool:

        def compute(method: str, requests: list[Any], batch_size: int) -> list[Any]:
            parts = pool.map(_compute, [(method, share, batch_size) for share in shares(requests, n, batch_size)])
            return [result for part in parts for result in part]

        yield compute


def _load(model: ScoringModel, slots: Any, threads: int) -> None:
    import torch

    from evaluator.zero_shot.loading import build, read

    torch.set_num_threads(threads)
    weights = read(model.info, tokenizer=model.tokenizer, code=model.code)
    device = slots.get()
    _LOADED["model"] = build(weights, dtype=model.dtype, device=device, code=model.code, capacity=model.capacity)
    _LOADED["tokenizer"] = weights.tokenizer


def _compute(work: tuple[str, list[Any], int]) -> list[Any]:
    from evaluator.harness import loglik

    method, requests, batch_size = work
    return list(loglik.METHODS[method](_LOADED["model"], _LOADED["tokenizer"], requests, batch_size=batch_size))
