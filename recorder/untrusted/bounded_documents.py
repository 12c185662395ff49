"""YAML, TOML and JSON documents a team or a run supplies, parsed within bounds: the one reader for them.

Each file goes through `recorder.untrusted.untrusted_files.read_bounded` (a regular file only: a FIFO or a device is
refused at once; its apparent size checked before a byte is read), then is parsed with caps on nodes and depth,
and every failure is one IrregularFileError naming the file. Bytes alone do not bound the work: PyYAML keeps
an object of several hundred bytes per node, so 16 MiB of flow lists (`[1, [2, 3], ...]`, two bytes a node)
took 3.4 GB and more than 400 s; the YAML loader counts as it composes and stops at the first node past a cap.
A config a trainer writes is a few hundred nodes, nested a handful deep: the caps are tens of times that.
YAML anchors and aliases are refused (a few hundred bytes of aliases expand into gigabytes).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded

MAX_BYTES = 16 * 1024 * 1024
MAX_NODES = 20_000
MAX_DEPTH = 100


class _CountingLoader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader that refuses aliases and anchors and stops past MAX_NODES nodes or MAX_DEPTH levels."""

    nodes = 0
    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self._refuse(event, "YAML alias refused")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._refuse(event, f"YAML anchor &{anchor} refused")
        self.nodes += 1
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self._refuse(event, f"YAML nested more than {MAX_DEPTH} deep, more than a config holds: refused")
        if self.nodes > MAX_NODES:
            self._refuse(event, f"YAML of more than {MAX_NODES:,} nodes, more than a config holds: refused")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def _refuse(self, event: Any, what: str) -> None:
        raise IrregularFileError(f"{self.name}: line {event.start_mark.line + 1}: {what}")


def _text(path: Path, what: str, limit: int, follow: bool) -> str:
    data = read_bounded(path, limit, what, follow=follow)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IrregularFileError(f"{path}: not a readable {what} (not UTF-8: {e.reason} at byte {e.start})") from e


def read_yaml(path: Path, what: str = "YAML file", *, limit: int = MAX_BYTES, follow: bool = False) -> Any:
    """The YAML document at `path` as plain data (bounded as above); IrregularFileError naming the file."""
    loader = _CountingLoader(_text(path, what, limit, follow))
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except RecursionError as e:  # a million `[`: PyYAML's parser recurses once per level
        raise IrregularFileError(f"{path}: not a readable {what} (nested deeper than Python parses)") from e
    except yaml.YAMLError as e:
        raise IrregularFileError(f"{path}: not a readable {what} ({' '.join(str(e).split())})") from e
    finally:
        loader.dispose()


def read_toml(path: Path, what: str = "TOML file", *, limit: int = MAX_BYTES, follow: bool = False) -> Any:
    """The TOML document at `path` (bounded: size before reading, depth and nodes after); IrregularFileError."""
    import tomllib

    return _parsed(path, what, _text(path, what, limit, follow), tomllib.loads, tomllib.TOMLDecodeError)


def _parsed(path: Path, what: str, text: str, parse: Callable[[str], Any], errors: type[Exception]) -> Any:
    try:
        doc = parse(text)
    except RecursionError as e:  # tomllib and json recurse once per level: 5,000 `[` end the parser's stack
        raise IrregularFileError(f"{path}: not a readable {what} (nested deeper than Python parses)") from e
    except errors as e:
        raise IrregularFileError(f"{path}: not a readable {what} ({e})") from e
    problem = past_caps(doc)
    if problem:
        raise IrregularFileError(f"{path}: {problem}, more than a {what} holds: refused")
    return doc


def past_caps(doc: Any) -> str | None:
    """Which cap a parsed document is past (MAX_NODES nodes, MAX_DEPTH levels), or None; walked from a list,
    never by recursion."""
    nodes = 0
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            return f"nested more than {MAX_DEPTH} deep"
        if nodes > MAX_NODES:
            return f"more than {MAX_NODES:,} values"
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return None


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members as a dict; ValueError naming a key given twice (which one is meant is not
    for the reader to guess: `json` alone keeps the last)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} given twice")
        out[key] = value
    return out
