"""A safetensors file's header, read without safetensors or torch: its metadata and tensor shapes.

The header is 8 bytes of little-endian length, then that many bytes of JSON, then the tensors' bytes. The
header is parsed with every bound checked: its length inside the file and under a cap (so a hostile file
cannot make a reader allocate more), and each tensor's byte range in order, inside the file, of its shape's
size and apart from every other tensor's. The loader (recorder.checkpoints.load) reads tensors through
the same parse.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.errors import DataError

MAX_HEADER_BYTES = 100 * 1024 * 1024
# bytes per element of each dtype safetensors writes; a dtype not named here is read only by its shape
DTYPE_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2,
    "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1,
}  # fmt: skip


class HeaderError(DataError):
    """A file that is not a readable safetensors file."""


@dataclass(frozen=True)
class Header:
    """What a safetensors header says: its `__metadata__` strings, each tensor's dtype and shape, and where
    each tensor's bytes lie (offsets into the data that follows the header, which starts at `data_start`)."""

    metadata: dict[str, str]
    tensors: dict[str, tuple[str, tuple[int, ...]]]
    offsets: dict[str, tuple[int, int]]
    data_start: int

    @property
    def parameters(self) -> int:
        """The number of values stored, over every tensor."""
        return sum(math.prod(shape) for _, shape in self.tensors.values())


def header_length(path: Path, first: bytes, file_bytes: int) -> int:
    """The header's length from the file's first 8 bytes; HeaderError when it is not inside the file of
    `file_bytes` bytes or is over MAX_HEADER_BYTES (a length past the end would read a header cut short)."""
    if len(first) != 8 or file_bytes < 8:
        raise HeaderError(f"{path}: too short for a safetensors file")
    length: int = struct.unpack("<Q", first)[0]
    if length > file_bytes - 8:
        raise HeaderError(
            f"{path}: its first 8 bytes give a header of {length:,} bytes, past the end of the file "
            f"({file_bytes:,} bytes): not a safetensors file"
        )
    if length > MAX_HEADER_BYTES:
        raise HeaderError(f"{path}: safetensors header of {length} bytes (more than {MAX_HEADER_BYTES})")
    return length


def read_header(path: Path) -> Header:
    """The header of the safetensors file at `path`, every bound checked (`parse_header`); HeaderError when
    it is not one."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            length = header_length(path, f.read(8), size)
            raw = f.read(length)
    except OSError as e:
        raise HeaderError(f"{path}: cannot read ({e.strerror})") from e
    return parse_header(path, raw, size)


def parse_header(path: Path, raw: bytes, file_bytes: int) -> Header:
    """The header whose JSON is `raw` in the file at `path` of `file_bytes` bytes. HeaderError (naming the
    file and the tensor) unless every tensor has a dtype, a shape and `data_offsets` [begin, end] in order,
    inside the file's data, as many bytes as its shape and dtype take, and no two tensors share a byte: a
    tensor read from another's bytes, or from past the file, is not the tensor the header names."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError; RecursionError: too deep
        raise HeaderError(f"{path}: the safetensors header is not JSON ({e})") from e
    if not isinstance(doc, dict):
        raise HeaderError(f"{path}: the safetensors header is not a JSON object")
    data_start = 8 + len(raw)
    metadata = doc.pop("__metadata__", None) or {}
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
    offsets: dict[str, tuple[int, int]] = {}
    for name, spec in doc.items():
        shape = spec.get("shape") if isinstance(spec, dict) else None
        if not isinstance(shape, list) or not all(_count(d) for d in shape):
            raise HeaderError(f"{path}: tensor {name!r} has no valid shape")
        tensors[name] = (str(spec.get("dtype")), tuple(shape))
        offsets[name] = _offsets(path, name, spec, tensors[name], file_bytes - data_start)
    _check_disjoint(path, offsets)
    return Header(
        metadata={str(k): str(v) for k, v in _mapping(metadata).items()},
        tensors=tensors,
        offsets=offsets,
        data_start=data_start,
    )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _offsets(
    path: Path, name: str, spec: dict[str, Any], kind: tuple[str, tuple[int, ...]], data: int
) -> tuple[int, int]:
    where = spec.get("data_offsets")
    if not (isinstance(where, list) and len(where) == 2 and all(_count(o) for o in where)):
        raise HeaderError(f"{path}: tensor {name!r} has no valid data_offsets ({where!r:.80}): two byte offsets")
    begin, end = where
    if begin > end:
        raise HeaderError(f"{path}: tensor {name!r} has data_offsets [{begin}, {end}], not in order")
    if end > data:
        raise HeaderError(
            f"{path}: tensor {name!r} has data_offsets [{begin}, {end}], past the {data:,} bytes of data the file holds"
        )
    dtype, shape = kind
    need = DTYPE_BYTES[dtype] * math.prod(shape) if dtype in DTYPE_BYTES else None
    if need is not None and end - begin != need:
        raise HeaderError(
            f"{path}: tensor {name!r} is {dtype} {list(shape)} ({need:,} bytes) but its data_offsets "
            f"[{begin}, {end}] hold {end - begin:,}"
        )
    return begin, end


def _check_disjoint(path: Path, offsets: dict[str, tuple[int, int]]) -> None:
    """No byte is two tensors': sorted by where they begin, each must begin at or after the furthest end so far."""
    furthest: tuple[int, str] | None = None
    for begin, end, name in sorted((b, e, n) for n, (b, e) in offsets.items() if e > b):
        if furthest is not None and begin < furthest[0]:
            other = furthest[1]
            raise HeaderError(
                f"{path}: tensors {other!r} (bytes {list(offsets[other])}) and {name!r} (bytes {[begin, end]}) "
                "overlap: one would be read from the other's bytes"
            )
        if furthest is None or end > furthest[0]:
            furthest = (end, name)


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}
