"""YAML for imported configs: plain data only, no anchors or aliases, and a size cap.

Aliases let a few hundred bytes expand into gigabytes ("billion laughs": a 371-byte NeMo-RL config became
one 1.85 GB event). A config a trainer writes has no need of them, so they are refused, naming the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from recorder.errors import InputError

MAX_YAML_BYTES = 16 * 1024 * 1024


class UnsafeYamlError(InputError):
    """A YAML file with anchors or aliases, or larger than the cap."""


class _NoAliasLoader(yaml.SafeLoader):  # type: ignore[misc]
    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise UnsafeYamlError(f"{self.name}: line {self.peek_event().start_mark.line + 1}: YAML alias refused")
        event = self.peek_event()
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise UnsafeYamlError(f"{self.name}: line {event.start_mark.line + 1}: YAML anchor &{anchor} refused")
        return super().compose_node(parent, index)


def load_plain_yaml(path: Path) -> Any:
    """The YAML document at `path` as plain data; UnsafeYamlError for aliases, anchors or a huge file.

    Raises FileNotFoundError and yaml.YAMLError as yaml does, for the caller to word.
    """
    size = path.stat().st_size
    if size > MAX_YAML_BYTES:
        raise UnsafeYamlError(f"{path}: {size} bytes of YAML (more than {MAX_YAML_BYTES}): refused")
    loader = _NoAliasLoader(path.read_text())
    loader.name = str(path)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
