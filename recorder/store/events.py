"""The event: one recorded fact. Its Arrow schema comes from `schemas/event_v1.toml`."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pyarrow as pa

import schemas
from recorder.errors import EventDecodeError

SCHEMA_VERSION = 1
SCHEMA_VERSION_KEY = b"recorder.schema_version"
GENESIS_DIGEST = bytes(32)

_ARROW_TYPES = {"string": pa.string(), "int64": pa.int64()}


@cache
def schema_spec(version: int = SCHEMA_VERSION) -> dict[str, Any]:
    """The parsed `schemas/event_vN.toml`."""
    spec: dict[str, Any] = tomllib.loads(schemas.read_text(f"event_v{version}.toml"))
    assert spec["version"] == version
    return spec


@cache
def arrow_schema(version: int = SCHEMA_VERSION) -> pa.Schema:
    """The Arrow schema of an event segment, with its version in the schema metadata."""
    fields = [
        pa.field(f["name"], _ARROW_TYPES[f["type"]], nullable=f["nullable"]) for f in schema_spec(version)["field"]
    ]
    return pa.schema(fields, metadata={SCHEMA_VERSION_KEY: str(version).encode()})


COLUMNS: tuple[str, ...] = tuple(arrow_schema().names)


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One recorded fact, as read back or as just appended.

    `value` and `data` are the parsed JSON; `value_json` and `data_json` the stored canonical text.
    """

    run_id: str
    writer: str
    seq: int
    time_ns: int
    mono_ns: int
    kind: str
    step: int | None
    samples_count: int | None
    key: str | None
    value_json: str | None
    data_json: str
    digest: str
    segment: str = field(default="", compare=False)

    @property
    def value(self) -> Any:
        return None if self.value_json is None else self._decode("value", self.value_json)

    @property
    def data(self) -> dict[str, Any]:
        parsed = self._decode("data", self.data_json)
        if not isinstance(parsed, dict):
            raise EventDecodeError(
                f"{self.segment} seq {self.seq}: data is not a JSON object: the segment was "
                "altered; run `recorder verify`"
            )
        return parsed

    def _decode(self, column: str, text: str) -> Any:
        # The writer only stores canonical JSON, so a parse error means the bytes changed after the append
        # (reading does not check digests; `verify` does).
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as e:  # RecursionError: nested deeper than Python parses
            raise EventDecodeError(
                f"{self.segment} seq {self.seq}: {column} is not JSON ({e}): the segment was "
                "altered; run `recorder verify`"
            ) from e

    def row(self) -> tuple[Any, ...]:
        """The stored columns in schema order."""
        return (
            self.run_id,
            self.writer,
            self.seq,
            self.time_ns,
            self.mono_ns,
            self.kind,
            self.step,
            self.samples_count,
            self.key,
            self.value_json,
            self.data_json,
            self.digest,
        )


def canonical_bytes(
    run_id: str,
    writer: str,
    seq: int,
    time_ns: int,
    mono_ns: int,
    kind: str,
    step: int | None,
    samples_count: int | None,
    key: str | None,
    value_json: str | None,
    data_json: str,
) -> bytes:
    """The bytes the digest covers: every column but the digest, as a compact JSON array."""
    return _CANONICAL_ENCODER.encode(
        [run_id, writer, seq, time_ns, mono_ns, kind, step, samples_count, key, value_json, data_json]
    ).encode()


_CANONICAL_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)  # as json.dumps builds it


def chain_digest(previous: bytes, canonical: bytes) -> bytes:
    """SHA-256 over the previous event's digest and this event's canonical bytes."""
    return hashlib.sha256(previous + canonical).digest()
