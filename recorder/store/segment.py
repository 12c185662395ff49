"""The segment file: an Arrow IPC stream of one-row record batches, one per event.

Layout: the schema message, then one encapsulated record-batch message per event (each written with a
single `write`), then, when the writer closes, the end-of-stream marker. Any Arrow reader opens it.

Encoding one row through pyarrow's builders costs ~55 us, more than a whole mllog line. The metadata of a
one-row batch of a fixed schema has a fixed layout, so we take pyarrow's own encoding of a template row
once, find the numbers that vary (null counts, buffer offsets and lengths, body length) by walking its
flatbuffer, and patch them per event. A test checks the bytes equal pyarrow's for random rows.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from recorder.store.events import arrow_schema
from recorder.untrusted.untrusted_files import irregular, is_regular

CONTINUATION = b"\xff\xff\xff\xff"
END_OF_STREAM = CONTINUATION + b"\x00\x00\x00\x00"
SEGMENT_SUFFIX = ".arrows"
_SEGMENT_NAME = re.compile(r"^(?P<writer>[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*)-(?P<number>\d{4,})\.arrows$")
WRITER_NAME = re.compile(r"^[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*$")


def segment_name(writer: str, number: int) -> str:
    return f"{writer}-{number:04d}{SEGMENT_SUFFIX}"


def parse_segment_name(name: str) -> tuple[str, int] | None:
    """(writer, number) of a segment file name, or None if the name is not one."""
    m = _SEGMENT_NAME.match(name)
    return (m["writer"], int(m["number"])) if m else None


def list_segments(events_dir: Path) -> list[Path]:
    """Every regular file in `events/` that is named like a segment, sorted by name (`skipped_entries` names
    the rest: a directory, FIFO or symlink is never opened)."""
    return sorted(p for p in events_dir.iterdir() if p.name.endswith(SEGMENT_SUFFIX) and is_regular(p))


def skipped_entries(events_dir: Path) -> list[str]:
    """Why each entry named like a segment but not a regular file is skipped, sorted by name."""
    return sorted(
        why for p in events_dir.iterdir() if p.name.endswith(SEGMENT_SUFFIX) and (why := irregular(p)) is not None
    )


def _pad8(n: int) -> int:
    return (n + 7) & ~7


def _table_field(buf: bytes, table: int, index: int) -> int:
    """Absolute position of field `index` of the flatbuffer table at `table` (0 if absent)."""
    vtable = table - struct.unpack_from("<i", buf, table)[0]
    vt_size = struct.unpack_from("<H", buf, vtable)[0]
    slot = 4 + 2 * index
    if slot >= vt_size:
        return 0
    off = struct.unpack_from("<H", buf, vtable + slot)[0]
    return table + off if off else 0


def _deref(buf: bytes, pos: int) -> int:
    offset: int = struct.unpack_from("<I", buf, pos)[0]
    return pos + offset


def _one_value_array(type_: pa.DataType) -> pa.Array:
    if type_ == pa.string():
        return pa.Array.from_buffers(type_, 1, [None, pa.py_buffer(struct.pack("<ii", 0, 1)), pa.py_buffer(b"x")])
    return pa.Array.from_buffers(type_, 1, [None, pa.py_buffer(struct.pack("<q", 1))])


@dataclass(frozen=True)
class _Layout:
    metadata: bytes  # the template's flatbuffer, padded
    body_length_at: int
    nodes_at: int  # first FieldNode struct (length, null_count)
    buffers_at: int  # first Buffer struct (offset, length)
    is_string: tuple[bool, ...]


class RowEncoder:
    """Encodes one event row as an encapsulated Arrow IPC record-batch message."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        # Built from buffers: pa.array and from_pylist import pandas (0.3 s at every CLI start).
        template = [_one_value_array(f.type) for f in schema]
        message = pa.RecordBatch.from_arrays(template, schema=schema).serialize().to_pybytes()
        meta_len = struct.unpack_from("<i", message, 4)[0]
        meta = message[8 : 8 + meta_len]
        root = _deref(meta, 0)
        header = _deref(meta, _table_field(meta, root, 2))
        nodes = _deref(meta, _table_field(meta, header, 1))
        buffers = _deref(meta, _table_field(meta, header, 2))
        is_string = tuple(f.type == pa.string() for f in schema)
        assert struct.unpack_from("<I", meta, nodes)[0] == len(schema)
        assert struct.unpack_from("<I", meta, buffers)[0] == sum(3 if s else 2 for s in is_string)
        self._layout = _Layout(
            metadata=meta,
            body_length_at=_table_field(meta, root, 3),
            nodes_at=nodes + 4,
            buffers_at=buffers + 4,
            is_string=is_string,
        )
        self._prefix = CONTINUATION + struct.pack("<i", meta_len)
        self._nodes = struct.Struct("<" + "qq" * len(schema))
        self._buffers = struct.Struct("<" + "qq" * sum(3 if s else 2 for s in is_string))
        template_lengths = struct.unpack_from("<" + "qq" * len(schema), meta, nodes + 4)[::2]
        assert set(template_lengths) == {1}, template_lengths  # encode writes every node's length as 1

    def encode(self, row: tuple[Any, ...]) -> bytes:
        layout = self._layout
        # Every FieldNode is (length 1, null count) and every Buffer is (offset, length): collected flat and
        # patched with one pack_into each, since per-field calls were most of the writer's and verify's time.
        nodes: list[int] = []
        buffers: list[int] = []
        body: list[bytes] = []
        offset = 0
        for value, is_string in zip(row, layout.is_string, strict=False):
            if value is None:
                nodes += (1, 1)
                buffers += (offset, 1, offset + 8, 8)  # validity bitmap (one 0 bit), then offsets or the value
                body.append(_NULL_BODY)
                offset += 16
                if is_string:
                    buffers += (offset, 0)
            elif is_string:
                raw = value.encode()
                n = len(raw)
                padded = _pad8(n)
                nodes += (1, 0)
                buffers += (offset, 0, offset, 8, offset + 8, n)
                body.append(_OFFSETS.pack(0, n))
                if n:
                    body.append(raw + b"\x00" * (padded - n) if padded != n else raw)
                offset += 8 + padded
            else:
                nodes += (1, 0)
                buffers += (offset, 0, offset, 8)
                body.append(_INT64.pack(value))
                offset += 8
        meta = bytearray(layout.metadata)
        self._nodes.pack_into(meta, layout.nodes_at, *nodes)
        self._buffers.pack_into(meta, layout.buffers_at, *buffers)
        _INT64.pack_into(meta, layout.body_length_at, offset)
        return self._prefix + bytes(meta) + b"".join(body)


_OFFSETS = struct.Struct("<ii")
_INT64 = struct.Struct("<q")
_NULL_BODY = b"\x00" * 16  # a null's validity bitmap and its zero offsets or value, 8 bytes each


@cache
def row_encoder() -> RowEncoder:
    """The encoder for the current event schema (built once: it serializes a template row)."""
    return RowEncoder(arrow_schema())


def schema_message(schema: pa.Schema) -> bytes:
    """The stream's first message."""
    return bytes(schema.serialize().to_pybytes())
