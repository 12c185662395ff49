"""A tensor that `torch.save` wrote, viewed in place in bytes already read: nothing copied, nothing run.

torch DCP's file system writer stores every tensor chunk as one `torch.save` archive inside a `.distcp`
shard: an uncompressed zip of a small pickle (`data.pkl`, which rebuilds the tensor) and the raw storage
bytes (`data/<key>`). torch.load would copy each storage into memory of its own; the loader has already read
(and hashed) the shard into memory of its own, so the tensor views those bytes instead, as a safetensors
tensor does.

The pickle goes through an allow list, as `.metadata` does: torch's two tensor rebuilds (here rebuilt as
views), its storage classes and dtypes (for the element type) and `OrderedDict`. Any other global, a tensor
subclass included, is refused before it is resolved, and so is any BUILD (a state set on an object made).
"""

from __future__ import annotations

import io
import struct
import zipfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recorder.checkpoints.torch_dcp.safe_metadata import AttributeCheckedUnpickler

if TYPE_CHECKING:
    import torch

_LOCAL_HEADER = struct.Struct("<4s5H3I2H")  # a zip entry's local header: its name and extra field follow


class TorchSaveError(ValueError):
    """Bytes that are not one plain tensor as torch.save writes it."""


@dataclass(frozen=True, slots=True)
class _Storage:
    """A storage record of the archive: where its bytes begin in the buffer, its dtype and element count."""

    offset: int
    dtype: torch.dtype
    numel: int


def view_tensor(buf: memoryview, start: int, length: int) -> torch.Tensor:
    """The tensor in the torch.save archive at `buf[start:start + length]`, a view of `buf`."""
    archive = _ArchiveView(buf, start, length)
    loaded = _Unpickler(archive).load()
    import torch

    if not isinstance(loaded, torch.Tensor):
        raise TorchSaveError(f"holds a {type(loaded).__name__}, not a tensor")
    return loaded


def view_number(buf: memoryview, start: int, length: int) -> int | float:
    """The plain number (or one-element tensor's value) in the torch.save archive at `buf[start:start + length]`,
    such as the step a DCP checkpoint keeps beside model and optimizer: read through the same allow list."""
    import torch

    loaded = _Unpickler(_ArchiveView(buf, start, length)).load()
    if isinstance(loaded, torch.Tensor) and loaded.numel() == 1:
        loaded = loaded.item()
    if isinstance(loaded, (int, float)) and not isinstance(loaded, bool):
        return loaded
    raise TorchSaveError(f"holds a {type(loaded).__name__}, not a number")


class _ArchiveView:
    """The records of one torch.save zip, located without reading their contents."""

    def __init__(self, buf: memoryview, start: int, length: int) -> None:
        self.buf, self.start, self.end = buf, start, min(start + length, len(buf))
        try:
            self.zip = zipfile.ZipFile(_ViewReader(buf[start : start + length]))
        except (zipfile.BadZipFile, ValueError) as e:
            raise TorchSaveError(f"not a torch.save archive ({e})") from e
        names = [n for n in self.zip.namelist() if n.endswith("/data.pkl")]
        if len(names) != 1:
            raise TorchSaveError("not a torch.save archive (no data.pkl)")
        self.prefix = names[0][: -len("data.pkl")]
        order = self._small("byteorder")
        if order not in (None, b"little"):
            raise TorchSaveError(f"stored {order!r}-endian; only little-endian is read")

    def _small(self, name: str) -> bytes | None:
        try:
            info = self.zip.getinfo(self.prefix + name)
        except KeyError:
            return None
        # torch.save stores every record uncompressed: a deflated pickle could inflate without bound
        if info.compress_type != zipfile.ZIP_STORED:
            raise TorchSaveError(f"record {name!r} is compressed; torch.save never compresses: refused")
        self._located(f"record {name!r}", info)
        try:
            return self.zip.read(info)
        except (zipfile.BadZipFile, ValueError) as e:  # a record cut short, or failing its CRC-32
            raise TorchSaveError(f"not a torch.save archive ({e})") from e

    def _located(self, what: str, info: zipfile.ZipInfo) -> tuple[int, int]:
        """(where the record's bytes begin in the buffer, its size): both ends inside this chunk's archive,
        never another chunk's bytes before it nor after it, nor past the shard. `what` names it."""
        at = self.start + info.header_offset
        if info.header_offset < 0 or at < self.start:
            raise TorchSaveError(f"{what} lies before the archive")
        if at + _LOCAL_HEADER.size > self.end:
            raise TorchSaveError(f"{what} lies past the archive")
        fields = _LOCAL_HEADER.unpack_from(self.buf, at)
        if fields[0] != b"PK\x03\x04":
            raise TorchSaveError(f"{what} has no local header")
        begin = at + _LOCAL_HEADER.size + fields[-2] + fields[-1]
        if begin + info.file_size > self.end or begin + info.compress_size > self.end:
            raise TorchSaveError(f"{what} lies past the archive")
        return begin, info.file_size

    def pickle(self) -> bytes:
        data = self._small("data.pkl")
        assert data is not None
        return data

    def record(self, key: str) -> tuple[int, int]:
        """(offset in the buffer, size) of storage record `key`, which must be stored uncompressed."""
        try:
            info = self.zip.getinfo(f"{self.prefix}data/{key}")
        except KeyError as e:
            raise TorchSaveError(f"storage record {key!r} is missing") from e
        if info.compress_type != zipfile.ZIP_STORED:
            raise TorchSaveError(f"storage record {key!r} is compressed")
        return self._located(f"storage record {key!r}", info)


class _Unpickler(AttributeCheckedUnpickler):
    """No BUILD at all (`settable` is empty): torch.save writes a tensor as one call to its rebuild, never
    with a state to set afterwards; a BUILD on the tensor would run `Tensor.__setstate__`, which sets
    `requires_grad`, its hooks, or points it at another storage."""

    def __init__(self, archive: _ArchiveView) -> None:
        super().__init__(io.BytesIO(archive.pickle()))
        self._archive = archive

    def refuse(self, why: str) -> Exception:
        return TorchSaveError(f"{why}: refused, nothing set")

    def find_class(self, module: str, name: str) -> Any:
        import collections

        import torch
        from torch.storage import _storage_type_to_dtype_map

        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return self._rebuild
        if (module, name) == ("torch._utils", "_rebuild_tensor_v3"):  # dtypes without a typed storage class
            return self._rebuild_bytes
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch.storage", "UntypedStorage"):
            return _StorageClass(torch.uint8)
        if module == "torch" and name in _storage_type_to_dtype_map():
            return _StorageClass(_storage_type_to_dtype_map()[name])
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise TorchSaveError(f"names {module}.{name}, which a plain tensor never does: refused, nothing run")

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise TorchSaveError(f"unexpected persistent reference {pid!r:.80}")
        _, storage_class, key, _location, numel = pid
        if not isinstance(storage_class, _StorageClass) or not isinstance(numel, int):
            raise TorchSaveError(f"unexpected persistent reference {pid!r:.80}")
        offset, size = self._archive.record(str(key))
        if size != numel * storage_class.dtype.itemsize:
            raise TorchSaveError(f"storage record {key!r} holds {size} bytes, not {numel} x {storage_class.dtype}")
        return _Storage(offset, storage_class.dtype, numel)

    def _rebuild_bytes(
        self, storage: Any, storage_offset: int, size: Any, stride: Any, grad: bool, hooks: Any, dtype: Any, *_: Any
    ) -> torch.Tensor:
        import torch

        if not isinstance(storage, _Storage) or storage.dtype != torch.uint8 or not isinstance(dtype, torch.dtype):
            raise TorchSaveError("a tensor rebuilt from something other than a byte storage and a dtype")
        if storage.numel % dtype.itemsize:
            raise TorchSaveError(f"a byte storage of {storage.numel} does not hold whole {dtype} elements")
        return self._rebuild(
            _Storage(storage.offset, dtype, storage.numel // dtype.itemsize), storage_offset, size, stride
        )

    def _rebuild(self, storage: Any, storage_offset: int, size: Any, stride: Any, *_: Any) -> torch.Tensor:
        import torch

        if not isinstance(storage, _Storage):
            raise TorchSaveError("a tensor rebuilt from something other than a storage record")
        size, stride = tuple(size), tuple(stride)
        extent = storage_offset + sum((s - 1) * st for s, st in zip(size, stride, strict=True)) + 1
        if min(size, default=1) > 0 and (storage_offset < 0 or extent > storage.numel or min(stride, default=0) < 0):
            raise TorchSaveError(f"a tensor of size {list(size)} reaches past its storage of {storage.numel}")
        if storage.numel == 0:
            return torch.empty(size, dtype=storage.dtype)
        base = torch.frombuffer(self._archive.buf, dtype=storage.dtype, count=storage.numel, offset=storage.offset)
        return base.as_strided(size, stride, storage_offset)


@dataclass(frozen=True, slots=True)
class _StorageClass:
    """What the pickle's storage class stands for here: only the dtype of its elements."""

    dtype: torch.dtype


class _ViewReader(io.RawIOBase):
    """A read-only file over a memoryview, so that zipfile finds the records without a copy of the archive."""

    def __init__(self, view: memoryview) -> None:
        self._view, self._pos = view, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._view)}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        n = max(0, min(len(buffer), len(self._view) - self._pos))
        memoryview(buffer).cast("B")[:n] = self._view[self._pos : self._pos + n]
        self._pos += n
        return n
