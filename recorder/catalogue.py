"""The event catalogue (`schemas/catalogue.toml`): which kinds exist and which are critical."""

from __future__ import annotations

import tomllib
from functools import cache
from typing import Any

import schemas
from recorder.errors import UnknownKindError


@cache
def catalogue() -> dict[str, dict[str, Any]]:
    """Kind name -> its entry (writer, when, critical, step, samples_count, key, value, data)."""
    kinds: dict[str, dict[str, Any]] = tomllib.loads(schemas.read_text("catalogue.toml"))["kind"]
    return kinds


@cache
def critical_kinds() -> frozenset[str]:
    """Kinds fsynced before `append` returns."""
    return frozenset(name for name, entry in catalogue().items() if entry["critical"])


def check_kind(kind: str) -> None:
    if kind not in catalogue():
        known = ", ".join(sorted(catalogue()))
        raise UnknownKindError(f"unknown event kind {kind!r}: schemas/catalogue.toml lists {known}")
