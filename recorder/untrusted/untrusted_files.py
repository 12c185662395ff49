"""Reading files a run holds without trusting what they are.

An entry of `events/` can be a directory, a FIFO or a symlink to `/dev/zero` (put there by accident or on
purpose). Opening a FIFO blocks forever and reading `/dev/zero` never ends, so files are opened with
`O_NONBLOCK | O_NOFOLLOW` and checked with `fstat` (the check and the read use the same descriptor, so the
entry cannot be swapped between them). Whatever is not a regular file is named and skipped.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from recorder.errors import InputError, SegmentError
from recorder.untrusted.tree_walk import TreeWalkError, walk


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


def arrow_input(path: Path) -> Any:
    """A pyarrow input file for `path`, whatever bytes its name holds: pyarrow opens files by UTF-8 names only,
    so a path that is not UTF-8 (a run under a folder named in another encoding) is opened by Python and
    handed over as a file object."""
    import pyarrow as pa

    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return pa.PythonFile(open(path, "rb"), mode="r")  # closed with the NativeFile
    return pa.OSFile(str(path))


class IrregularFileError(InputError):
    """An input that is not a regular file, or is larger than its reader allows."""


def read_bounded(path: Path, limit: int, what: str = "file", *, follow: bool = False) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, read through one descriptor that never follows
    a symlink (unless `follow`: a Hugging Face cache links its files; a loop is then named) nor blocks (a
    FIFO); IrregularFileError naming it otherwise. A sparse file is judged by its apparent size, and a file
    that grows while it is read stops at `limit + 1` bytes: nothing past the limit is ever read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW))
    except OSError as e:
        why = "a symlink, not followed" if os.path.islink(path) and not follow else e.strerror
        raise IrregularFileError(f"{path}: cannot read the {what} ({why})") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            noun = what if what.endswith("file") else f"{what} file"
            raise IrregularFileError(f"{path}: {kind_of(st.st_mode)}, not a regular file; give a {noun}")
        if st.st_size > limit:
            raise IrregularFileError(f"{path}: {st.st_size:,} bytes, larger than a {what} may be ({limit:,})")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise IrregularFileError(f"{path}: cannot read the {what} ({e.strerror})") from e
    finally:
        os.close(fd)
    if len(data) > limit:
        raise IrregularFileError(f"{path}: grew past {limit:,} bytes while it was read; a {what} is smaller")
    return data


JSON_LIMIT = 16 * 1024 * 1024  # a layout's meta, info and config files are a few KB


def read_json(path: Path, what: str = "JSON file", *, limit: int = JSON_LIMIT, follow: bool = False) -> Any:
    """The JSON document of a regular file of at most `limit` bytes (`read_bounded`); IrregularFileError naming
    the file for anything else, for text that is not JSON, and for JSON nested deeper than Python parses.
    FileNotFoundError when there is no such entry, for the caller to word."""
    if not os.path.lexists(path):
        raise FileNotFoundError(2, "No such file or directory", str(path))
    data = read_bounded(path, limit, what, follow=follow)
    try:
        return json.loads(data)
    except RecursionError as e:
        raise IrregularFileError(f"{path}: not a readable {what} (nested deeper than Python parses)") from e
    except ValueError as e:  # JSONDecodeError, and bytes that are not UTF-8
        raise IrregularFileError(f"{path}: not a readable {what} ({e})") from e


def first_irregular(directory: Path) -> str | None:
    """Why `directory` is not a plain tree of folders and regular files, naming the first entry that is not
    (walked without following a link, to `recorder.untrusted.tree_walk`'s depth: a FIFO would block its reader, a device
    never end, a symlink could loop or lead out of the tree); None when it is. `directory` itself must not be
    a link either."""
    try:
        mode = directory.lstat().st_mode
    except OSError as e:
        return f"{directory}: cannot be read ({e.strerror})"
    if not stat.S_ISDIR(mode):
        return f"{directory}: {kind_of(mode)}, not a folder"
    try:
        for entry in walk(directory):
            if not entry.is_file(follow_symlinks=False):
                return f"{entry.path}: {kind_of(entry.stat(follow_symlinks=False).st_mode)}, not a regular file"
    except TreeWalkError as e:
        return str(e)
    return None
