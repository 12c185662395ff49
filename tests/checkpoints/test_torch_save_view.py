"""A tensor torch.save wrote, viewed in place in a buffer: every dtype and layout torch.save writes comes
back equal, as a view of the buffer (not a copy), and a pickle that is not a plain tensor is refused."""

from __future__ import annotations

import ctypes
import io
import os
import pickle
import struct
import zipfile
from collections import OrderedDict
from pathlib import Path

import pytest
import torch

from recorder.checkpoints.torch_dcp.torch_save_view import TorchSaveError, view_tensor

TENSORS = {
    "fp32": torch.randn(5, 3),
    "bf16": torch.randn(4, 6).to(torch.bfloat16),
    "float8, no typed storage class": torch.ones(7).to(torch.float8_e4m3fn),
    "int64": torch.arange(10),
    "transposed": torch.randn(3, 4).t(),
    "scalar": torch.tensor(3.5),
    "empty": torch.empty(0, 4),
}


def _archive(obj: object, before: bytes = b"") -> tuple[bytearray, int]:
    """`obj` torch.saved after `before` (as a DCP shard holds chunks one after another)."""
    out = io.BytesIO()
    out.write(before)
    torch.save(obj, out)
    return bytearray(out.getvalue()), len(before)


@pytest.mark.parametrize("name", TENSORS)
def test_a_saved_tensor_comes_back_equal_as_a_view_of_the_buffer(name: str) -> None:
    t = TENSORS[name]
    buf, start = _archive(t, before=b"x" * 13)  # an odd offset: chunks lie anywhere in a shard
    got = view_tensor(memoryview(buf), start, len(buf) - start)
    assert (got.dtype, got.shape, got.stride()) == (t.dtype, t.shape, t.stride())
    assert torch.equal(got.float(), t.float())
    if t.numel():
        base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        assert base <= got.data_ptr() < base + len(buf)


class _RunsACommand:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_naming_anything_else_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    buf, start = _archive(_RunsACommand(tmp_path / "ran"))
    with pytest.raises(TorchSaveError, match=r"names posix\.system"):
        view_tensor(memoryview(buf), start, len(buf))
    assert not (tmp_path / "ran").exists()


class _Storage:
    """Pickled as a persistent reference to storage record "0", as torch.save pickles a storage."""


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj: object) -> object:
        return ("storage", torch.FloatStorage, "0", "cpu", 4) if isinstance(obj, _Storage) else None


class _Tensor:
    def __init__(self, size: tuple[int, ...]) -> None:
        self.size = size

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (torch._utils._rebuild_tensor_v2, (_Storage(), 0, self.size, (1,), False, OrderedDict()))


def _crafted(size: tuple[int, ...]) -> bytearray:
    """An archive as torch.save lays it out, a storage of 4 floats, and a pickle asking for `size` of it."""
    pkl = io.BytesIO()
    _Pickler(pkl, protocol=2).dump(_Tensor(size))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl.getvalue())
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/data/0", torch.arange(4.0).numpy().tobytes())
    return bytearray(out.getvalue())


def test_a_tensor_reaching_past_its_storage_is_refused() -> None:
    fits = _crafted((4,))
    assert torch.equal(view_tensor(memoryview(fits), 0, len(fits)), torch.arange(4.0))
    past = _crafted((8,))
    with pytest.raises(TorchSaveError, match=r"size \[8\] reaches past its storage of 4"):
        view_tensor(memoryview(past), 0, len(past))


def test_bytes_that_are_no_tensor_archive_are_refused() -> None:
    buf, _ = _archive(torch.arange(4))
    with pytest.raises(TorchSaveError, match="not a torch.save archive"):
        view_tensor(memoryview(buf), 0, 50)
    buf, _ = _archive({"a": 1})
    with pytest.raises(TorchSaveError, match="holds a dict, not a tensor"):
        view_tensor(memoryview(buf), 0, len(buf))
    buf, _ = _archive(torch.arange(4))
    buf[buf.index(b"_rebuild_tensor_v2") + 3] ^= 1  # the pickle altered: its checksum no longer holds
    with pytest.raises(TorchSaveError, match="not a torch.save archive"):
        view_tensor(memoryview(buf), 0, len(buf))


def test_a_storage_record_said_to_reach_past_its_archive_is_refused() -> None:
    """Its bytes would be the next chunk's in the shard, or past its end: never viewed."""
    buf = _crafted((4,))
    entry = buf.index(b"PK\x01\x02")  # the first central directory entry; its name follows at +46
    while not bytes(buf[entry + 46 : entry + 46 + 14]).startswith(b"archive/data/0"):
        entry = buf.index(b"PK\x01\x02", entry + 4)
    struct.pack_into("<II", buf, entry + 20, 1 << 20, 1 << 20)  # its central directory's two sizes
    with pytest.raises(TorchSaveError, match="storage record '0' lies past the archive"):
        view_tensor(memoryview(buf), 0, len(buf))


def _shifted_before(buf: bytearray, start: int, name: str, by: int) -> None:
    """The archive at `buf[start:]` rewritten so that record `name` points `by` bytes earlier than it lies:
    the central directory said to begin `by` bytes later, every other record's offset moved with it."""
    z64 = buf.index(b"PK\x06\x06", start)  # torch.save writes a zip64 end record: its offset of the directory
    (offset_cd,) = struct.unpack_from("<Q", buf, z64 + 48)
    struct.pack_into("<Q", buf, z64 + 48, offset_cd + by)
    entry = buf.index(b"PK\x01\x02", start)
    while entry >= 0:
        length = struct.unpack_from("<H", buf, entry + 28)[0]
        if bytes(buf[entry + 46 : entry + 46 + length]).decode() != name:
            (at,) = struct.unpack_from("<I", buf, entry + 42)
            struct.pack_into("<I", buf, entry + 42, at + by)
        entry = buf.find(b"PK\x01\x02", entry + 4)


def test_a_storage_record_said_to_lie_before_its_archive_is_refused() -> None:
    """Before its archive lies the previous chunk of the shard: its bytes are never viewed as this one's."""
    buf, start = _archive(torch.arange(4.0), before=bytes(_archive(torch.ones(200))[0]))
    assert torch.equal(view_tensor(memoryview(buf), start, len(buf) - start), torch.arange(4.0))
    record = bytes(buf[start:]).index(b"archive/data/0")
    _shifted_before(buf, start, "archive/data/0", by=record + 64)
    with pytest.raises(TorchSaveError, match="storage record '0' lies before the archive"):
        view_tensor(memoryview(buf), start, len(buf) - start)


def test_a_deflated_pickle_is_refused_before_it_is_inflated() -> None:
    """torch.save never compresses; a deflated data.pkl (0.3 MB once inflated 170 s) is not inflated at all."""
    saved, _ = _archive(torch.arange(4.0))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(bytes(saved))) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            squeeze = zipfile.ZIP_DEFLATED if info.filename.endswith("data.pkl") else zipfile.ZIP_STORED
            dst.writestr(info.filename, src.read(info), compress_type=squeeze)
    buf = out.getvalue()
    with pytest.raises(TorchSaveError, match="record 'data.pkl' is compressed"):
        view_tensor(memoryview(buf), 0, len(buf))
