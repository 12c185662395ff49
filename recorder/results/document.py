"""What every results.json class shares: its fields are the file's keys in the file's order, encoded as the
evaluators write the file, and parsed back with every type checked.

The encoding (`to_json`): JSON indented by one space, keys in field order, non-ASCII text as it is, no NaN or
infinity (a score that is not a number is a bug, not evidence), and a final newline. A nested `Part` is an
object with its own fields; a `Mapping` is an open object (provenance, timings: what the writer had).

A field that defaults to None is a key some documents leave out: `to_dict` leaves it out when None, and a
file may lack it. Every other field is always written (null where its value is None) and must be in the file:
`schema` too, although it defaults to the class's own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Self, get_type_hints

from recorder.errors import DataError
from recorder.store.codec import Dialect, Mismatch, decode, join, show


class ResultsDocError(DataError):
    """A results.json that is not the document its class describes (not JSON, a key missing or unexpected,
    a value of the wrong type)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """A JSON object of a results.json whose keys are known: one field per key, in the file's order."""

    def to_dict(self) -> dict[str, Any]:
        """The object as written: a nested part stays a Part (`to_json` encodes it), an optional key that is
        None is left out."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, raw: object, *, where: str = "") -> Self:
        """Parse a JSON object (as `json.loads` gives it); ResultsDocError naming the key at fault."""
        if not isinstance(raw, dict):
            raise ResultsDocError(f"{where or cls.__name__}: {show(raw)}, expected an object")
        hints = _hints(cls)
        known = {f.name: f for f in fields(cls)}
        unexpected = [k for k in raw if k not in known]
        if unexpected:
            raise ResultsDocError(f"{where or cls.__name__}: unexpected key {unexpected[0]!r}")
        missing = [n for n, f in known.items() if n not in raw and f.default is not None]
        if missing:
            raise ResultsDocError(f"{where or cls.__name__}: lacks {', '.join(missing)}")
        return cls(**{k: _parse(v, hints[k], join(where, k)) for k, v in raw.items()})


@dataclass(frozen=True, slots=True, kw_only=True)
class Document(Part):
    """A whole results.json. Subclasses start with `schema`, a Literal naming their format."""

    def to_json(self) -> bytes:
        """The file's bytes."""
        text = json.dumps(self, default=_encode, indent=1, sort_keys=False, ensure_ascii=False, allow_nan=False)
        return (text + "\n").encode()

    @classmethod
    def from_json(cls, body: bytes | str) -> Self:
        """Parse a file's bytes; ResultsDocError when they are not this document."""
        try:
            raw = json.loads(body)
        except (ValueError, RecursionError) as e:  # RecursionError: nested deeper than Python parses
            raise ResultsDocError(f"{cls.__name__}: not JSON ({e})") from None
        return cls.from_dict(raw)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The fields' annotations, resolved once per class (a document may hold thousands of parts)."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _encode(value: object) -> object:
    """What `json.dumps` cannot encode itself: a part (as its dict) or a read-only mapping."""
    if isinstance(value, Part):
        return value.to_dict()
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"results.json: cannot encode {type(value).__name__}")


def _nested(tp: type[Part], raw: object, where: str) -> Part:
    try:
        return tp.from_dict(raw, where=where)
    except ResultsDocError as e:
        raise Mismatch(str(e)) from None


RESULTS = Dialect(
    typed_mappings=True,
    path_errors=True,
    is_nested=lambda tp: isinstance(tp, type) and issubclass(tp, Part),
    nested=_nested,
)


def _parse(raw: object, tp: Any, where: str) -> Any:
    try:
        return decode(raw, tp, where, RESULTS)
    except Mismatch as e:
        raise ResultsDocError(str(e)) from None
