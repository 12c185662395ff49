"""Reading files a run holds without trusting what they are.

An entry of `events/` can be a directory, a FIFO or a symlink to `/dev/zero` (put there by accident or on
purpose). Opening a FIFO blocks forever and reading `/dev/zero` never ends, so files are opened with
`O_NONBLOCK | O_NOFOLLOW` and checked with `fstat` (the check and the read use the same descriptor, so the
entry cannot be swapped between them). Whatever is not a regular file is named and skipped.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from recorder.errors import SegmentError


def kind_of(mode: int) -> str:
    """What an entry is, in words, for messages."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def is_regular(path: Path) -> bool:
    """A regular file itself, not through a symlink."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def irregular(path: Path) -> str | None:
    """None for a regular file, else why it is skipped ("x.arrows: a FIFO, skipped")."""
    try:
        mode = path.lstat().st_mode
    except OSError as e:
        return f"{path.name}: cannot be read ({e.strerror}), skipped"
    if stat.S_ISREG(mode):
        return None
    return f"{path.name}: {kind_of(mode)}, not a segment file, skipped"


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file; SegmentError (naming it) for anything else, without blocking on it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as e:
        why = "a symlink" if path.is_symlink() else e.strerror
        raise SegmentError(f"{path}: cannot be read as a segment ({why})", segment=path.name) from e
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise SegmentError(f"{path}: {kind_of(mode)}, not a segment file", segment=path.name)
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)
