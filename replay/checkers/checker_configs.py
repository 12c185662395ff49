"""The compliance checker's YAML rule files, parsed once per process instead of once per log.

mlperf-logging's checker re-reads and re-parses every rule file (`common.yaml`, `closed_common.yaml`,
`closed_<benchmark>.yaml`) for every log it checks: `configured_checks` calls `yaml.load(f,
Loader=yaml.BaseLoader)`. Parsing is about three quarters of its time on a typical result file, and scoring
10,000 imported runs checks 10,000 logs against the same three files. While `parsed_once()` is active, the
checker's module sees a `yaml` whose `load` returns a fresh copy of the tree parsed the first time (keyed by
the file's path, size and modification time, so an edited rule file is parsed again). Every rule still runs
on every line: only the parsing of an unchanged file is shared.

Why a copy: the checker runs the rules' own CODE blocks with the parsed tree among their locals; none of
the shipped files changes it, and a copy keeps a future one that does from leaking into the next log.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import yaml

_Key = tuple[str, int, int, str]
_parsed: dict[_Key, Any] = {}
_lock = threading.Lock()


def _copy(tree: Any) -> Any:
    """A copy of what BaseLoader builds (lists, dicts and strings; strings are immutable and shared)."""
    if isinstance(tree, dict):
        return {k: _copy(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_copy(v) for v in tree]
    return tree


class _ParsedOnce:
    """Stands in for the `yaml` module inside mlperf-logging's compliance checker: `load` is cached, every
    other attribute is the real module's."""

    def __getattr__(self, name: str) -> Any:
        return getattr(yaml, name)

    def load(self, stream: IO[str], Loader: Any) -> Any:
        name = getattr(stream, "name", None)
        if not isinstance(name, str):
            return yaml.load(stream, Loader=Loader)
        stat = os.fstat(stream.fileno())
        key = (os.path.abspath(name), stat.st_size, stat.st_mtime_ns, Loader.__name__)
        with _lock:
            if key not in _parsed:
                _parsed[key] = yaml.load(stream, Loader=Loader)
            return _copy(_parsed[key])


@contextmanager
def parsed_once(checker_module: Any) -> Iterator[None]:
    """While active, `checker_module` (mlperf-logging's `mlp_compliance`) parses each rule file once."""
    real = checker_module.yaml
    checker_module.yaml = _ParsedOnce()
    try:
        yield
    finally:
        checker_module.yaml = real
