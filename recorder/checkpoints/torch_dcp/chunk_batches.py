"""The tensor chunks of one DCP shard read as batches: one archive checked in full for each kind, the others
compared with it byte for byte, all at once.

A DCP shard holds one `torch.save` archive per tensor chunk; a 397B model's step holds hundreds of thousands,
and most are alike (every expert's weight of a layer has the same shape, so its archive is the same bytes
but for the weights themselves). Reading each through zipfile and the unpickler costs tens of microseconds
apiece, which at that count is minutes. So the archives of a shard are grouped by length; the first of a
group is read as any chunk is (torch_save_view: every record located inside it, its pickle through the
allow list), and every other archive of the group must equal it byte for byte except where archives of
the same tensor kind differ: each record's CRC-32 (local header, data descriptor, central directory), the storage
record's bytes (the weights) and torch's per-save serialization id. Those bytes are compared in numpy,
without a Python object per archive. An archive that differs anywhere else is read on its own, as the
first of another group (at most MAX_KINDS groups per length; past that each is read alone), so a shard
of hand-made archives is read correctly, only as slowly as before.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from recorder.checkpoints.torch_dcp.torch_save_view import TorchSaveError, _ArchiveView, _Storage, _Unpickler

if TYPE_CHECKING:
    import torch

MAX_KINDS = 64  # archives of one length read in full before the rest are read one by one
_BATCH_BYTES = 8 << 20  # bytes compared per numpy gather: its index array is 8 times that
_CENTRAL = struct.Struct("<4s6H3I5H2I")  # a central directory entry; name, extra and comment follow
_VARYING_RECORDS = (".data/serialization_id",)  # written afresh by every torch.save


@dataclass(frozen=True, slots=True)
class ArchiveKind:
    """What the first archive of a group holds: its tensor's dtype, size, stride and storage offset, where
    its storage bytes begin (from the archive's start) and how many elements they hold; `fixed` the byte
    ranges every archive of the kind must share with it, and `expect` its bytes."""

    dtype: torch.dtype
    size: tuple[int, ...]
    stride: tuple[int, ...]
    storage_offset: int
    data_at: int
    numel: int
    fixed: tuple[tuple[int, int], ...]
    expect: np.ndarray


@dataclass(frozen=True, slots=True)
class Batch:
    """Archives of one kind: their positions among the shard's chunks, and their tensors stacked
    ([archives, *size], views of the shard's bytes where the layout allows, else a copy)."""

    index: np.ndarray
    tensors: torch.Tensor


def read_kind(buf: memoryview, start: int, length: int) -> ArchiveKind:
    """The archive at `buf[start:start + length]` read in full (TorchSaveError), and what others must share."""
    import torch

    archive = _ArchiveView(buf, start, length)
    captured: list[Any] = []

    class Capturing(_Unpickler):
        def _rebuild(self, storage: Any, storage_offset: int, size: Any, stride: Any, *rest: Any) -> torch.Tensor:
            out = super()._rebuild(storage, storage_offset, size, stride, *rest)
            captured.append((storage, storage_offset, tuple(size), tuple(stride)))
            return out

    loaded = Capturing(archive).load()
    if not isinstance(loaded, torch.Tensor) or len(captured) != 1:
        raise TorchSaveError(f"holds a {type(loaded).__name__}, not a tensor")
    storage, storage_offset, size, stride = captured[0]
    assert isinstance(storage, _Storage)
    varying = [(at + 16, at + 20) for at in _central_entries(archive, buf, start)]
    for info in archive.zip.infolist():
        name = info.filename[len(archive.prefix) :]
        begin, size_ = archive._located(f"record {name!r}", info)
        varying.append((start + info.header_offset + 14, start + info.header_offset + 18))  # its CRC-32
        if info.flag_bits & 0x08:  # a data descriptor follows the record: its CRC-32, after its signature if any
            at = begin + info.compress_size
            at += 4 if bytes(buf[at : at + 4]) == b"PK\x07\x08" else 0
            varying.append((at, at + 4))
        if name.startswith("data/") or name in _VARYING_RECORDS:
            varying.append((begin, begin + size_))
    fixed, at = [], start
    for a, b in sorted(varying):
        if a > at:
            fixed.append((at - start, a - start))
        at = max(at, b)
    if at < start + length:
        fixed.append((at - start, length))
    expect = np.frombuffer(buf, dtype=np.uint8, count=length, offset=start).copy()
    return ArchiveKind(
        dtype=storage.dtype,
        size=size,
        stride=stride,
        storage_offset=storage_offset,
        data_at=storage.offset - start,
        numel=storage.numel,
        fixed=tuple(fixed),
        expect=expect,
    )


def _central_entries(archive: _ArchiveView, buf: memoryview, start: int) -> list[int]:
    """Where each central directory entry begins in `buf` (its CRC-32 is 16 bytes in)."""
    at = start + archive.zip.start_dir
    out = []
    for _ in archive.zip.infolist():
        if at + _CENTRAL.size > archive.end:
            raise TorchSaveError("the central directory lies past the archive")
        fields = _CENTRAL.unpack_from(buf, at)
        if fields[0] != b"PK\x01\x02":
            raise TorchSaveError("a central directory entry has no signature")
        out.append(at)
        at += _CENTRAL.size + fields[10] + fields[11] + fields[12]
    return out


def matching(data: np.ndarray, starts: np.ndarray, kind: ArchiveKind) -> np.ndarray:
    """Which of the archives at `starts` (all of the kind's length) equal its first on every fixed byte."""
    ok = np.ones(len(starts), dtype=bool)
    for a, b in kind.fixed:
        width = b - a
        step = max(1, _BATCH_BYTES // max(width, 1))
        want = kind.expect[a:b]
        cols = np.arange(a, b, dtype=np.int64)
        for i in range(0, len(starts), step):
            rows = starts[i : i + step, None] + cols[None, :]
            ok[i : i + step] &= (data[rows] == want).all(axis=1)
    return ok


def stacked(buf: memoryview, data: np.ndarray, starts: np.ndarray, kind: ArchiveKind) -> torch.Tensor:
    """[archives, *size]: each archive's tensor, gathered from its storage bytes."""
    import torch

    nbytes = kind.numel * kind.dtype.itemsize
    if len(starts) == 1 and nbytes:  # one archive (an embedding, a norm): a view of the shard's bytes
        raw = torch.frombuffer(buf, dtype=torch.uint8, count=nbytes, offset=int(starts[0]) + kind.data_at)[None]
    else:
        raw = torch.empty(len(starts), nbytes, dtype=torch.uint8)
        cols = np.arange(nbytes, dtype=np.int64)
        step = max(1, _BATCH_BYTES // max(nbytes, 1))
        for i in range(0, len(starts), step):
            rows = (starts[i : i + step] + kind.data_at)[:, None] + cols[None, :]
            raw[i : i + step] = torch.from_numpy(data[rows])
    storage = raw.view(kind.dtype) if nbytes else torch.empty(len(starts), 0, dtype=kind.dtype)
    return storage.as_strided((len(starts), *kind.size), (kind.numel, *kind.stride), kind.storage_offset)


def batches(buf: memoryview, starts: np.ndarray, lengths: np.ndarray) -> Iterator[tuple[ArchiveKind | None, Batch]]:
    """Every archive of the shard in batches of one kind; a batch with no kind holds one archive read alone
    (TorchSaveError for an archive that is not one plain tensor)."""
    from recorder.checkpoints.torch_dcp.torch_save_view import view_tensor

    data = np.frombuffer(buf, dtype=np.uint8)
    for length in np.unique(lengths):
        pending = np.flatnonzero(lengths == length)
        kinds = 0
        while pending.size and kinds < MAX_KINDS:
            kind = read_kind(buf, int(starts[pending[0]]), int(length))
            same = matching(data, starts[pending], kind)
            same[0] = True
            yield kind, Batch(pending[same], stacked(buf, data, starts[pending[same]], kind))
            pending, kinds = pending[~same], kinds + 1
        for i in pending:
            yield None, Batch(np.array([i]), view_tensor(buf, int(starts[i]), int(length))[None])
