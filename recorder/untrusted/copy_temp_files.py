"""The temporary files copy tools leave in a folder they are still writing, or were stopped writing: never
part of a checkpoint, so never hashed into its manifest (an import names them instead).

rsync writes each file as `.<name>.<6 random characters>` beside it and renames it when whole (and, with
`--delay-updates`, into a `.~tmp~/` folder); browsers, curl, wget and many sync tools write `*.part`,
`*.partial`, `*.crdownload` or `*.tmp`; editors and `cp --backup` leave `*~`.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Final

_RSYNC_TEMP: Final = re.compile(r"\..+\.[A-Za-z0-9]{6}")
_SUFFIXES: Final = (".tmp", ".part", ".partial", ".crdownload", "~")
_FOLDERS: Final = frozenset({".~tmp~"})


def is_copy_temp(path: PurePath) -> bool:
    """Whether `path` (relative to the checkpoint, or a name) is a copy tool's temporary file."""
    name = path.name
    if _RSYNC_TEMP.fullmatch(name) or name.endswith(_SUFFIXES):
        return True
    return any(part in _FOLDERS for part in path.parts[:-1])
