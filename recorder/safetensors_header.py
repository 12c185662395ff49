"""A safetensors file's header, read without safetensors or torch: its metadata and tensor shapes.

The header is 8 bytes of little-endian length, then that many bytes of JSON. The length is capped, so a
hostile file cannot make a reader allocate more than the cap.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.errors import DataError

MAX_HEADER_BYTES = 100 * 1024 * 1024


class HeaderError(DataError):
    """A file that is not a readable safetensors file."""


@dataclass(frozen=True)
class Header:
    """What a safetensors header says: its `__metadata__` strings and each tensor's dtype and shape."""

    metadata: dict[str, str]
    tensors: dict[str, tuple[str, tuple[int, ...]]]

    @property
    def parameters(self) -> int:
        """The number of values stored, over every tensor."""
        return sum(math.prod(shape) for _, shape in self.tensors.values())


def read_header(path: Path) -> Header:
    """The header of the safetensors file at `path`; HeaderError when it is not one."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise HeaderError(f"{path}: too short for a safetensors file")
            (length,) = struct.unpack("<Q", head)
            if length > MAX_HEADER_BYTES:
                raise HeaderError(f"{path}: safetensors header of {length} bytes (more than {MAX_HEADER_BYTES})")
            raw = f.read(length)
    except OSError as e:
        raise HeaderError(f"{path}: cannot read ({e.strerror})") from e
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError; RecursionError: too deep
        raise HeaderError(f"{path}: the safetensors header is not JSON ({e})") from e
    if not isinstance(doc, dict):
        raise HeaderError(f"{path}: the safetensors header is not a JSON object")
    metadata = doc.pop("__metadata__", None) or {}
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, spec in doc.items():
        shape = spec.get("shape") if isinstance(spec, dict) else None
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise HeaderError(f"{path}: tensor {name!r} has no valid shape")
        tensors[name] = (str(spec.get("dtype")), tuple(shape))
    return Header(metadata={str(k): str(v) for k, v in _mapping(metadata).items()}, tensors=tensors)


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}
