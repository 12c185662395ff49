"""YAML for imported configs: plain data only, no anchors or aliases, and caps on bytes, nodes and depth.

The reading and its caps are the core's one reader of supplied documents (`recorder.untrusted.bounded_documents`: why
each cap is where it is); this keeps the adapters' spelling: a missing file is FileNotFoundError for the caller
to word, and everything else refused is an UnsafeYamlError naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from recorder.errors import InputError
from recorder.untrusted.bounded_documents import read_yaml
from recorder.untrusted.untrusted_files import IrregularFileError


class UnsafeYamlError(InputError):
    """A YAML file with anchors or aliases, past the caps, or not a regular file."""


def load_plain_yaml(path: Path) -> Any:
    """The YAML document at `path` as plain data; UnsafeYamlError for aliases, anchors, a huge or deep file,
    or text that is not YAML. FileNotFoundError when there is no such entry."""
    if not os.path.lexists(path):
        raise FileNotFoundError(2, "No such file or directory", str(path))
    try:
        return read_yaml(path, "YAML file")
    except IrregularFileError as e:
        raise UnsafeYamlError(str(e)) from e
