"""YAML for imported configs: plain data only, no anchors or aliases, and caps on bytes, nodes and depth.

Aliases let a few hundred bytes expand into gigabytes ("billion laughs": a 371-byte NeMo-RL config became
one 1.85 GB event). A config a trainer writes has no need of them, so they are refused, naming the line.
Bytes alone do not bound the work: PyYAML keeps a Python object of several hundred bytes per node, so 16 MiB
of flow lists (`[1, [2, 3], ...]`, two bytes a node) took 3.4 GB and more than 400 s. A NeMo-RL config is a
few hundred lines of a node or two each, nested a handful deep; past MAX_YAML_NODES (tens of times that) or
MAX_YAML_DEPTH the file is refused, naming its line, as soon as the composer reaches it: 20,000 nodes cost
PyYAML about half a CPU second.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from recorder.errors import InputError

MAX_YAML_BYTES = 16 * 1024 * 1024
MAX_YAML_NODES = 20_000
MAX_YAML_DEPTH = 100


class UnsafeYamlError(InputError):
    """A YAML file with anchors or aliases, or larger than the cap."""


class _NoAliasLoader(yaml.SafeLoader):  # type: ignore[misc]
    nodes = 0
    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise UnsafeYamlError(f"{self.name}: line {self.peek_event().start_mark.line + 1}: YAML alias refused")
        event = self.peek_event()
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise UnsafeYamlError(f"{self.name}: line {event.start_mark.line + 1}: YAML anchor &{anchor} refused")
        self.nodes += 1
        self.depth += 1
        if self.depth > MAX_YAML_DEPTH:
            self._refuse(event, f"YAML nested more than {MAX_YAML_DEPTH} deep")
        if self.nodes > MAX_YAML_NODES:
            self._refuse(event, f"YAML of more than {MAX_YAML_NODES:,} nodes")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def _refuse(self, event: Any, what: str) -> None:
        raise UnsafeYamlError(
            f"{self.name}: line {event.start_mark.line + 1}: {what}, more than a config holds: refused"
        )


def load_plain_yaml(path: Path) -> Any:
    """The YAML document at `path` as plain data; UnsafeYamlError for aliases, anchors or a huge file.

    Raises FileNotFoundError and yaml.YAMLError as yaml does, for the caller to word.
    """
    from recorder.untrusted_files import IrregularFileError, read_bounded

    if not os.path.lexists(path):
        raise FileNotFoundError(2, "No such file or directory", str(path))
    try:  # a regular file of at most MAX_YAML_BYTES: never a FIFO, a device or a sparse giant
        text = read_bounded(path, MAX_YAML_BYTES, "YAML file").decode("utf-8")
    except IrregularFileError as e:
        raise UnsafeYamlError(str(e)) from e
    except UnicodeDecodeError as e:
        raise UnsafeYamlError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    loader = _NoAliasLoader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except RecursionError as e:  # a million `[`: PyYAML's parser recurses once per level
        raise UnsafeYamlError(f"{path}: YAML nested deeper than Python parses: refused") from e
    finally:
        loader.dispose()
