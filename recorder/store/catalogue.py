"""The event catalogue (`schemas/catalogue.toml`): which kinds exist, which are critical, and who may write them."""

from __future__ import annotations

import re
import tomllib
from functools import cache
from typing import Any

import schemas
from recorder.errors import UnknownKindError


@cache
def catalogue() -> dict[str, dict[str, Any]]:
    """Kind name -> its entry (writer, writers, when, critical, step, samples_count, key, value, data)."""
    kinds: dict[str, dict[str, Any]] = tomllib.loads(schemas.read_text("catalogue.toml"))["kind"]
    return kinds


@cache
def critical_kinds() -> frozenset[str]:
    """Kinds fsynced before `append` returns."""
    return frozenset(name for name, entry in catalogue().items() if entry["critical"])


@cache
def run_writer_kinds() -> frozenset[str]:
    """Timing facts: kinds only the run's own writer (that of its run_opened) may record."""
    return frozenset(name for name, entry in catalogue().items() if entry.get("run_writer", False))


def _pattern(name: str) -> str:
    return ".+" if name == "*" else re.escape(name).replace(re.escape("<R>"), "[0-9]+")


@cache
def _writers_re(kind: str) -> re.Pattern[str]:
    names: list[str] = catalogue()[kind]["writers"]
    return re.compile("|".join(f"(?:{_pattern(n)})" for n in names))


def writers_of(kind: str) -> tuple[str, ...]:
    """The writer names the catalogue lets record `kind` (`<R>`: a rank number; `*`: any)."""
    return tuple(catalogue()[kind]["writers"])


@cache
def may_write(writer: str, kind: str) -> bool:
    """Whether the catalogue lets `writer` record `kind` (an unknown kind: no one may)."""
    return kind in catalogue() and _writers_re(kind).fullmatch(writer) is not None


# the importers' writer names: `import` (mllog), `import-nemo` (NeMo-RL), `import-dcp` (torch DCP), `import-series`
# (an importer of a format plugin the project does not ship)
IMPORTERS = "import"


def records_timing_of(writer: str, owner: str) -> bool:
    """Whether `writer` may record the timing facts (`run_writer_kinds`) of a run whose run_opened `owner`
    wrote: the owner itself; in an imported run, any importer (NeMo-RL checkpoints imported beside the mllog)."""
    return writer == owner or (owner.startswith(IMPORTERS) and writer.startswith(IMPORTERS))


def check_kind(kind: str) -> None:
    if kind not in catalogue():
        known = ", ".join(sorted(catalogue()))
        raise UnknownKindError(f"unknown event kind {kind!r}: schemas/catalogue.toml lists {known}")
