"""Where a DCP `.metadata` places every model tensor chunk, as arrays: checked against the shards before any
memory is allocated, then read a shard's batch at a time (chunk_batches) and put together into tensors.

A 397B model's step has hundreds of thousands of chunks (every expert's weight of every layer, in halves),
so nothing here makes a Python object per chunk after the plan is built: the bounds of every storage record
are checked in numpy, a tensor whose chunks form a regular grid (all one size, each at a multiple of it,
none twice: the experts stacked on one axis, FSDP's row blocks) is covered exactly by a count, and its
chunks are copied into it by one indexed assignment. Any other tensor is checked and put together chunk by
chunk (chunk_cover), as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from recorder.checkpoints.torch_dcp.chunk_batches import Batch, batches
from recorder.checkpoints.torch_dcp.chunk_cover import Chunk, check_cover, check_storage
from trainer.policy.errors import CheckpointError

if TYPE_CHECKING:
    import torch


@dataclass(slots=True)
class ShardPlan:
    """The model tensor chunks one shard holds, in the order `.metadata` lists them."""

    path: Path
    fqn: list[int] = field(default_factory=list)  # index into Plan.names
    offsets: list[tuple[int, ...]] = field(default_factory=list)
    sizes: list[tuple[int, ...]] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    length: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Plan:
    """Every model tensor `.metadata` declares (name, size, dtype) and where each chunk lies."""

    meta_file: Path
    names: list[str] = field(default_factory=list)
    size: list[tuple[int, ...]] = field(default_factory=list)
    dtype: list[Any] = field(default_factory=list)
    shards: dict[Path, ShardPlan] = field(default_factory=dict)
    # per tensor: (shard, position among its chunks) of each of its chunks
    parts: list[list[tuple[Path, int]]] = field(default_factory=list)


def plan(meta_file: Path, metadata: Any, is_model: Any) -> Plan:
    """The chunk plan of `metadata` for the tensors `is_model(fqn)` keeps; CheckpointError for a chunk with no
    storage record or one stored with a transform."""
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata

    # Byte entries (an optimizer's scalars, a step, Megatron's `_extra_state`, rng state) have no offset: they
    # are hashed with their shard and never read into the model.
    storage = {(i.fqn, tuple(i.offset)): si for i, si in metadata.storage_data.items() if i.offset is not None}
    out = Plan(meta_file)
    by_name: dict[str, ShardPlan] = {}  # a storage record's relative path -> its shard's plan
    for fqn, md in metadata.state_dict_metadata.items():
        if not isinstance(md, TensorStorageMetadata) or not is_model(fqn):
            continue
        index = len(out.names)
        out.names.append(fqn)
        out.size.append(tuple(md.size))
        out.dtype.append(md.properties.dtype)
        parts: list[tuple[Path, int]] = []
        for chunk in md.chunks:
            offsets = tuple(chunk.offsets)
            si = storage.get((fqn, offsets))
            if si is None:
                raise CheckpointError(f"{meta_file}: {fqn} chunk at {list(offsets)} has no storage record")
            if si.transform_descriptors:
                raise CheckpointError(f"{meta_file}: {fqn} is stored with {si.transform_descriptors}: not supported")
            shard = by_name.get(si.relative_path)
            if shard is None:
                shard = by_name[si.relative_path] = ShardPlan(meta_file.parent / si.relative_path)
                out.shards[shard.path] = shard
            parts.append((shard.path, len(shard.fqn)))
            shard.fqn.append(index)
            shard.offsets.append(offsets)
            shard.sizes.append(tuple(chunk.sizes))
            shard.start.append(si.offset)
            shard.length.append(si.length)
        out.parts.append(parts)
    return out


def check_declared(p: Plan, shard_bytes: dict[Path, int]) -> None:
    """Before any memory is allocated or any chunk read: each chunk's storage record lies inside its shard and
    holds its elements, and each tensor is covered exactly by its chunks (chunk_cover)."""
    itemsize = np.array([d.itemsize for d in p.dtype] or [0], dtype=np.int64)
    for path, shard in p.shards.items():
        start, length = np.array(shard.start, dtype=np.int64), np.array(shard.length, dtype=np.int64)
        numel = np.array([math.prod(s) for s in shard.sizes], dtype=np.int64)
        bad = (start < 0) | (length < 0) | (start + length > shard_bytes[path])
        bad |= numel * itemsize[np.array(shard.fqn, dtype=np.int64)] > length
        for i in np.flatnonzero(bad)[:1].tolist():  # the first, worded as chunk_cover words it
            fqn = shard.fqn[i]
            check_storage(str(p.meta_file), p.names[fqn], _chunk(shard, i), p.dtype[fqn].itemsize, shard_bytes[path])
    for index, parts in enumerate(p.parts):
        if not _regular_parts(p, index):
            chunks = [_chunk(p.shards[s], i) for s, i in parts]
            check_cover(str(p.meta_file), p.names[index], p.size[index], chunks)


def _regular_parts(p: Plan, index: int) -> bool:
    parts = p.parts[index]
    return _regular(p.size[index], [p.shards[s].offsets[i] for s, i in parts], [p.shards[s].sizes[i] for s, i in parts])


def _chunk(shard: ShardPlan, i: int) -> Chunk:
    return Chunk(shard.offsets[i], shard.sizes[i], str(shard.path), shard.start[i], shard.length[i])


def _regular(size: tuple[int, ...], offsets: list[tuple[int, ...]], sizes: list[tuple[int, ...]]) -> bool:
    """Whether the chunks are one size, each at a multiple of it inside the tensor, no two at one place and as
    many as fill it: then they cover it exactly (anything else is checked by chunk_cover)."""
    if not offsets or not size or any(len(s) != len(size) for s in sizes) or len(set(sizes)) != 1:
        return False
    c = np.array(sizes[0], dtype=np.int64)
    d = np.array(size, dtype=np.int64)
    if (c <= 0).any() or (d % c).any():
        return False
    o = np.array(offsets, dtype=np.int64).reshape(len(offsets), len(size))
    if (o < 0).any() or (o % c).any() or (o + c > d).any():
        return False
    grid = d // c
    return len(offsets) == int(np.prod(grid)) and len(np.unique(np.ravel_multi_index(tuple((o // c).T), grid))) == len(
        offsets
    )


@dataclass(frozen=True, slots=True)
class ShardRead:
    """One shard's chunks as read: each chunk's batch and row in it."""

    batches: list[Batch]
    batch_of: np.ndarray
    row_of: np.ndarray


def read_shard(buf: memoryview, path: Path, shard: ShardPlan, p: Plan) -> ShardRead:
    """Every chunk of `shard` from its bytes, each checked against the shape and dtype `.metadata` declares."""
    from recorder.checkpoints.torch_dcp.torch_save_view import TorchSaveError

    starts, lengths = np.array(shard.start, dtype=np.int64), np.array(shard.length, dtype=np.int64)
    found: list[Batch] = []
    batch_of = np.zeros(len(starts), dtype=np.int64)
    row_of = np.zeros(len(starts), dtype=np.int64)
    try:
        for _, batch in batches(buf, starts, lengths):
            _check_batch(path, shard, p, batch)
            batch_of[batch.index] = len(found)
            row_of[batch.index] = np.arange(len(batch.index))
            found.append(batch)
    except (TorchSaveError, ValueError, TypeError, RuntimeError) as e:
        raise CheckpointError(f"{path}: {_unreadable(buf, starts, lengths, shard, p)}cannot be read ({e})") from e
    return ShardRead(found, batch_of, row_of)


def _unreadable(buf: memoryview, starts: np.ndarray, lengths: np.ndarray, shard: ShardPlan, p: Plan) -> str:
    """Which chunk a batch's failure came from, read alone one at a time (only once a batch has failed), as
    "TENSOR at byte N " for the error; "a tensor chunk " when none fails alone."""
    for i in range(len(starts)):
        try:
            for _ in batches(buf, starts[i : i + 1], lengths[i : i + 1]):
                pass
        except Exception:  # the same failure, now of one chunk: it is named, and the batch's error is raised
            return f"{p.names[shard.fqn[i]]} at byte {shard.start[i]} "
    return "a tensor chunk "


def _check_batch(path: Path, shard: ShardPlan, p: Plan, batch: Batch) -> None:
    shape, dtype = tuple(batch.tensors.shape[1:]), batch.tensors.dtype
    for i in batch.index.tolist():
        fqn = shard.fqn[i]
        if shard.sizes[i] != shape:
            said = list(shard.sizes[i])
            raise CheckpointError(
                f"{path}: {p.names[fqn]} at byte {shard.start[i]} is {list(shape)}, .metadata says {said}"
            )
        if p.dtype[fqn] != dtype:  # the storage bounds were checked for the declared element size
            raise CheckpointError(
                f"{path}: {p.names[fqn]} at byte {shard.start[i]} is {dtype}, .metadata says {p.dtype[fqn]}"
            )


def assemble(p: Plan, read: dict[Path, ShardRead], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Every model tensor from its chunks, floating ones in `dtype`."""
    import torch

    state: dict[str, torch.Tensor] = {}
    for index, parts in enumerate(p.parts):
        size, name = p.size[index], p.names[index]
        if len(parts) == 1 and p.shards[parts[0][0]].sizes[parts[0][1]] == size:
            s, i = parts[0]
            r = read[s]
            state[name] = _as(r.batches[r.batch_of[i]].tensors[r.row_of[i]], dtype)
            continue
        kind = p.dtype[index]
        full = torch.empty(size, dtype=dtype if kind.is_floating_point else kind)
        if _regular_parts(p, index):
            _place_grid(full, p, parts, read)
            state[name] = full
            continue
        for s, i in parts:
            r, shard = read[s], p.shards[s]
            part = r.batches[r.batch_of[i]].tensors[r.row_of[i]]
            region = full
            for dim, (offset, n) in enumerate(zip(shard.offsets[i], part.shape, strict=True)):
                region = region.narrow(dim, offset, n)
            region.copy_(part)
        state[name] = full
    return state


def _place_grid(full: torch.Tensor, p: Plan, parts: list[tuple[Path, int]], read: dict[Path, ShardRead]) -> None:
    """Copies chunks forming a regular grid of equal blocks into `full`: each batch's rows into a buffer of
    the blocks in grid order (one index_copy), then the buffer into `full` in one permuted copy."""
    import torch

    chunk = p.shards[parts[0][0]].sizes[parts[0][1]]
    grid = [d // c for d, c in zip(full.shape, chunk, strict=True)]
    blocks = torch.empty((math.prod(grid), *chunk), dtype=full.dtype)
    for s in dict.fromkeys(s for s, _ in parts):
        r, shard = read[s], p.shards[s]
        idx = np.fromiter((i for t, i in parts if t == s), dtype=np.int64)
        at = np.array([shard.offsets[i] for i in idx.tolist()], dtype=np.int64).reshape(len(idx), len(chunk))
        flat = np.ravel_multi_index(tuple((at // np.array(chunk, dtype=np.int64)).T), grid)
        batch_of = r.batch_of[idx]
        for b in np.unique(batch_of).tolist():
            mine = batch_of == b
            rows = torch.from_numpy(r.row_of[idx[mine]])
            blocks.index_copy_(0, torch.from_numpy(flat[mine]), r.batches[b].tensors[rows].to(full.dtype))
    k = len(chunk)
    interleaved = [x for g, c in zip(grid, chunk, strict=True) for x in (g, c)]
    order = [x for d in range(k) for x in (d, k + d)]  # [grid..., chunk...] -> [g0, c0, g1, c1, ...]
    full.view(interleaved).copy_(blocks.view(*grid, *chunk).permute(order))


def _as(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return t.to(dtype) if t.is_floating_point() else t
