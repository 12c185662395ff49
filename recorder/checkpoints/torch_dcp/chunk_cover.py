"""Before any tensor of a DCP checkpoint is allocated: what `.metadata` declares must be what the shards hold.

`.metadata` declares each tensor's size and the chunks that make it up, each at its offsets with its sizes,
stored in a shard at a byte range. Left unchecked, a tensor with no chunk (or a hole between chunks) would be
allocated and left as uninitialised memory, two overlapping chunks would each decide part of it, and a
declared size of 4 TiB would be allocated before anything was read. So each model tensor must be covered
exactly by its chunks (every element by one chunk: no hole, no overlap, none outside), and every chunk's
elements must fit in its storage record, which must lie inside its shard: what is allocated is then bounded
by the bytes the shards really hold.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from trainer.policy.errors import CheckpointError


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of a tensor as `.metadata` places it: its offsets and sizes, and its storage record."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    shard: str  # the shard file's name, for messages
    start: int  # byte offset of its storage record in the shard
    length: int  # bytes of its storage record

    @property
    def numel(self) -> int:
        return math.prod(self.sizes)


def check_cover(where: str, fqn: str, size: Sequence[int], chunks: Sequence[Chunk]) -> None:
    """CheckpointError (naming `where`, the `.metadata` file, and `fqn`) unless `chunks` cover a tensor of
    `size` exactly: each inside it, none overlapping another, and their elements together all of its own."""
    size = tuple(size)
    if any(not isinstance(d, int) or d < 0 for d in size):
        raise CheckpointError(f"{where}: {fqn} has size {list(size)}: not a tensor's")
    for c in chunks:
        if len(c.offsets) != len(size) or len(c.sizes) != len(size):
            raise CheckpointError(
                f"{where}: {fqn} chunk at {list(c.offsets)} has {len(c.sizes)} dimensions, not {len(size)}"
            )
        if any(o < 0 or s < 0 or o + s > d for o, s, d in zip(c.offsets, c.sizes, size, strict=True)):
            raise CheckpointError(
                f"{where}: {fqn} chunk at {list(c.offsets)} of {list(c.sizes)} lies outside the tensor's {list(size)}"
            )
    covered, total = sum(c.numel for c in chunks), math.prod(size)
    _check_disjoint(where, fqn, [c for c in chunks if c.numel])
    if covered != total:
        what = "no chunk" if not chunks else f"chunks of {covered:,} elements"
        raise CheckpointError(
            f"{where}: {fqn} is declared {list(size)} ({total:,} elements) but has {what}: "
            "a hole its chunks do not fill would be memory nothing wrote"
        )


def check_storage(where: str, fqn: str, chunk: Chunk, itemsize: int, shard_bytes: int) -> None:
    """CheckpointError (naming the shard and `fqn`) unless the chunk's storage record lies inside its shard of
    `shard_bytes` and holds at least its elements' bytes."""
    if chunk.start < 0 or chunk.length < 0 or chunk.start + chunk.length > shard_bytes:
        raise CheckpointError(
            f"{chunk.shard}: {fqn} chunk at {list(chunk.offsets)} is stored at bytes {chunk.start}..."
            f"{chunk.start + chunk.length}, past the shard's {shard_bytes:,} bytes ({where})"
        )
    if chunk.numel * itemsize > chunk.length:
        raise CheckpointError(
            f"{chunk.shard}: {fqn} chunk at {list(chunk.offsets)} of {list(chunk.sizes)} needs "
            f"{chunk.numel * itemsize:,} bytes, its storage record holds {chunk.length:,} ({where})"
        )


def _check_disjoint(where: str, fqn: str, chunks: list[Chunk]) -> None:
    """No two chunks share an element, in O(n log n) for the one- and two-dimensional tensors that chunk counts
    grow with: a sweep along the dimension whose offsets differ most (FSDP's dim 0). The chunks met at a point
    of the sweep all hold that point, so (none overlapping so far) their spans on the other dimensions are
    apart; on a second dimension they are then disjoint intervals kept in order, and a chunk can only meet
    the one that begins last before it ends. A tensor of more dimensions compares a chunk with those in its
    way on the second dimension."""
    if len(chunks) < 2:
        return
    ndim = len(chunks[0].sizes)
    if ndim == 0:
        raise CheckpointError(f"{where}: {fqn} is a scalar stored in {len(chunks)} chunks: they overlap")
    axis = max(range(ndim), key=lambda d: len({c.offsets[d] for c in chunks}))
    other = next((d for d in range(ndim) if d != axis), None)
    order = sorted(chunks, key=lambda c: c.offsets[axis])
    ending: list[tuple[int, int]] = []  # (where a chunk met so far ends on the sweep's axis, its index)
    met: list[tuple[int, int, int]] = []  # the chunks met now: (start on `other`, end on `other`, index), in order
    for i, c in enumerate(order):
        while ending and ending[0][0] <= c.offsets[axis]:
            j = heapq.heappop(ending)[1]
            met.pop(bisect.bisect_left(met, _span(order[j], other, j)))
        hit = _first_met(order, met, c, other, ndim)
        if hit is not None:
            raise CheckpointError(
                f"{where}: {fqn} chunks at {list(hit.offsets)} and {list(c.offsets)} overlap: two chunks would "
                "each decide the same elements"
            )
        heapq.heappush(ending, (c.offsets[axis] + c.sizes[axis], i))
        bisect.insort(met, _span(c, other, i))


def _span(c: Chunk, d: int | None, index: int) -> tuple[int, int, int]:
    return (0, 1, index) if d is None else (c.offsets[d], c.offsets[d] + c.sizes[d], index)


def _first_met(order: list[Chunk], met: list[tuple[int, int, int]], c: Chunk, d: int | None, ndim: int) -> Chunk | None:
    """A chunk of `met` that shares an element with `c`, or None. Every chunk of `met` holds `c`'s start on
    the sweep's axis; `d` is the one other dimension compared in order (None for a one-dimensional tensor)."""
    if d is None:
        return order[met[0][2]] if met else None
    begin, end, _ = _span(c, d, 0)
    below = bisect.bisect_left(met, (end, -1, -1))  # the spans that begin before `c`'s ends
    if ndim == 2:  # disjoint intervals: only the last of them can reach into `c`
        return order[met[below - 1][2]] if below and met[below - 1][1] > begin else None
    for _, span_end, j in met[:below]:
        a = order[j]
        if span_end > begin and all(
            a.offsets[k] < c.offsets[k] + c.sizes[k] and c.offsets[k] < a.offsets[k] + a.sizes[k] for k in range(ndim)
        ):
            return a
    return None
