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
    """No two chunks share an element: a sweep along the dimension whose offsets differ most (FSDP's dim 0),
    comparing each chunk only with those it meets on that dimension."""
    if len(chunks) < 2:
        return
    ndim = len(chunks[0].sizes)
    axis = max(range(ndim), key=lambda d: len({c.offsets[d] for c in chunks})) if ndim else 0
    if ndim == 0:
        raise CheckpointError(f"{where}: {fqn} is a scalar stored in {len(chunks)} chunks: they overlap")
    active: list[Chunk] = []
    for c in sorted(chunks, key=lambda c: c.offsets[axis]):
        active = [a for a in active if a.offsets[axis] + a.sizes[axis] > c.offsets[axis]]
        for a in active:
            if all(
                a.offsets[d] < c.offsets[d] + c.sizes[d] and c.offsets[d] < a.offsets[d] + a.sizes[d]
                for d in range(ndim)
            ):
                raise CheckpointError(
                    f"{where}: {fqn} chunks at {list(a.offsets)} and {list(c.offsets)} overlap: two chunks would "
                    "each decide the same elements"
                )
        active.append(c)
