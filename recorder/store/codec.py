"""The one type-directed JSON codec: a value parsed from JSON, checked and converted by its field's annotation.

Two families of frozen dataclasses are read through it: the events' payloads (`recorder.store.kinds`, one class per
kind's `data`) and the results.json documents (`recorder.results`). They differ only in the options a
`Dialect` holds, never in how an annotation is read:

- `null`: a sentinel type whose member stands for a key recorded as JSON null where leaving the key out means
  something else (the events' `NULL`); results have none.
- `non_finite`: strings read as floats. Events record NaN and the infinities as "NaN", "Infinity",
  "-Infinity" (recorder.store.canonical); a results.json refuses them (a score that is not a number is a bug).
- `typed_mappings`: whether a `Mapping[str, X]` has each value checked as X (results) or is taken as the
  object it is (events: a foreign trainer's numbers stay exactly as recorded, so digests never move).
- `path_errors`: an error names the JSON path (`tasks.piqa.acc: str 'x', expected float`, results) or the
  key (`sha256 is int 1, expected str`, events).
- `nested`: how a nested known object (a payload inside a payload, a part inside a document) is read.

Upcasting happens where a payload is read from its event (`recorder.store.kinds.Payload.from_event`), through the
steps of `recorder.store.upcast`: no reader of facts calls them itself.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin


class Mismatch(Exception):
    """A value that does not have its annotation's type; each dialect's reader turns it into its own error,
    with the place."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    """The options two kinds of JSON document differ by (see the module's docstring)."""

    null: type | None = None
    non_finite: Mapping[str, float] = field(default_factory=dict)
    typed_mappings: bool = False
    path_errors: bool = False
    is_nested: Callable[[Any], bool]
    nested: Callable[[Any, Any, str], Any]  # (class, raw, where) -> the object; raises Mismatch

    def mismatch(self, where: str, raw: object, tp: Any) -> Mismatch:
        if self.path_errors:
            return Mismatch(f"{where}: {show(raw)}, expected {type_name(tp)}")
        return Mismatch(f"{where} is {show(raw)}, expected {type_name(tp)}")


# Literals whose members are a table's names, which may grow while the process runs (a checkpoint format added
# by a format plugin, recorder.checkpoints.formats.PLUGINS): the annotation's id -> the names the table holds now.
_TABLE_NAMES: dict[int, Callable[[], tuple[str, ...]]] = {}


def names_from_table(tp: Any, names: Callable[[], tuple[str, ...]]) -> None:
    """Decode the Literal `tp` against `names()`, the names its table holds when a value is read (those it
    was written with and any added since), so a payload never names what the table lacks."""
    _TABLE_NAMES[id(tp)] = names


def decode(raw: Any, tp: Any, where: str, dialect: Dialect) -> Any:
    """`raw` (as `json.loads` gives it) checked against the annotation `tp` and converted where the type says:
    tuples from lists, floats from the dialect's non-finite strings, nested objects through `dialect.nested`,
    the dialect's null member from null. Mismatch names `where`."""
    origin = get_origin(tp)
    if tp is Any or tp is object:
        return raw
    null = dialect.null
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        if raw is None and null is not None and null in options:
            return next(iter(null))  # type: ignore[call-overload]
        if raw is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return decode(raw, option, where, dialect)
            except Mismatch:
                continue
    elif null is not None and tp is null:
        if raw is None:
            return next(iter(null))  # type: ignore[call-overload]
    elif origin is Literal:
        members = get_args(tp)
        # a name the Literal spells is in its table too: the table is asked (which may load plugins) for others
        if raw not in members and (table := _TABLE_NAMES.get(id(tp))) is not None:
            members = table()
        if raw in members and type(raw) in {type(a) for a in members}:
            return raw
    elif tp is bool or tp is str or tp is type(None):
        if type(raw) is tp:
            return raw
    elif tp is int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
    elif tp is float:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return raw  # an int stays an int, so that it is written back as it was read
        if isinstance(raw, str) and raw in dialect.non_finite:
            return dialect.non_finite[raw]
    elif origin is tuple:
        if isinstance(raw, list):
            item = get_args(tp)[0]
            return tuple(decode(x, item, f"{where}[{i}]", dialect) for i, x in enumerate(raw))
    elif origin is Mapping or tp is Mapping:
        if isinstance(raw, dict):
            value = get_args(tp)[1] if get_args(tp) else Any
            if value is Any or not dialect.typed_mappings:
                return raw
            return {k: decode(v, value, join(where, k), dialect) for k, v in raw.items()}
    elif dialect.is_nested(tp):
        return dialect.nested(tp, raw, where)
    else:
        raise AssertionError(f"recorder.store.codec: no reader for the annotation {tp!r} of {where}")
    raise dialect.mismatch(where, raw, tp)


_JSON_TYPES: frozenset[type] = frozenset({str, int, float, bool, list, dict, type(None)})


def taken_as_is(tp: Any, dialect: Dialect) -> frozenset[type]:
    """The JSON value types that `decode` would return unchanged for `tp` after a check of their type alone:
    a reader may skip `decode` for them (the fast path of a million events)."""
    if tp is Any:
        return _JSON_TYPES
    options = get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)
    simple: dict[Any, set[type]] = {str: {str}, int: {int}, float: {float, int}, bool: {bool}, type(None): {type(None)}}
    out: set[type] = set()
    for option in options:
        if get_origin(option) is Mapping or option is Mapping:
            if not dialect.typed_mappings or get_args(option)[1:] in ((), (Any,)):
                out.add(dict)
        elif option is type(None) and dialect.null is not None and dialect.null in options:
            continue  # null becomes the dialect's null member
        else:
            out |= simple.get(option, set())
    return frozenset(out)


def join(where: str, key: str) -> str:
    """A JSON path one key deeper."""
    return f"{where}.{key}" if where else key


def show(raw: object) -> str:
    """A value as an error shows it: its type and a short repr."""
    text = repr(raw)
    return f"{type(raw).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def type_name(tp: Any) -> str:
    """An annotation as an error names it."""
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "").replace("collections.abc.", "")
