"""Output paths are checked before any work, so a bad `-o` costs nothing and writes nothing.

A directory, a missing or non-directory parent, a place the user cannot write, or an extension the writer
cannot produce: one `error:` line (exit 2), raised before a run is read or a figure drawn. A character device
or FIFO at the path (`-o /dev/null`) is written through, whatever its name (recorder.output).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from recorder.errors import InputError

# the folder of runs a history command reads (`query`, `runs`, `compact`)
RootOption = Annotated[Path, typer.Option("--root", envvar="RECORDER_ROOT", help="The folder holding the runs.")]


class OutputPathError(InputError):
    """An output path that cannot be written as asked."""


def check_output(path: Path, *, suffixes: tuple[str, ...] = ()) -> Path:
    """`path` if a file can be written there (with one of `suffixes`, when given); else OutputPathError."""
    if path.is_dir():
        raise OutputPathError(
            f"-o {path}: is a directory; give a file name inside it, e.g. {path / _example(suffixes)}"
        )
    if suffixes and path.suffix.lower() not in suffixes and not _device_or_pipe(path):
        got = f"extension {path.suffix!r}" if path.suffix else "no extension"
        raise OutputPathError(f"-o {path}: {got} is not supported; use {', '.join(suffixes)}")
    parent = path.parent
    if not parent.exists():
        raise OutputPathError(f"-o {path}: the folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise OutputPathError(f"-o {path}: {parent} is not a folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputPathError(f"-o {path}: the file is not writable")
    if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"-o {path}: cannot create files in {parent} (permission denied)")
    return path


def check_output_dir(path: Path | None) -> Path | None:
    """`path` if results can be written under it: a folder, or nothing yet (it is made), or None (no -o given);
    else OutputPathError. A file, device or FIFO there is never written into or replaced."""
    if path is not None and os.path.lexists(path) and not path.is_dir():
        raise OutputPathError(f"-o {path}: is not a folder; give a folder to write the results under (made if missing)")
    return path


def check_root(root: Path) -> Path:
    """`root` if new runs can be made in it (or, when missing, it can be made in its folder): else
    OutputPathError (exit 2), before torch or a log loads, so a typo in --root costs nothing. Only the root
    itself is made, never the folders above it (`RECORDER_ROOT=/nonexistent/x` is refused, not created).
    Nothing is left behind: the check makes a folder in the root or its folder and removes it (permissions
    alone say nothing to root, nor of /proc)."""
    try:
        os.lstat(root)  # a path too long for the filesystem is said here (main), not after torch loads
        place = root
    except FileNotFoundError:
        place = root.parent
    except NotADirectoryError:  # a folder above it is a file: that file is named
        place = root.parent
        while not os.path.lexists(place):
            place = place.parent
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            raise
        raise OutputPathError(f"--root {root}: {e.strerror or e}") from e
    if not os.path.lexists(place):
        raise OutputPathError(
            f"--root {root}: the folder {place} does not exist; create it first "
            "(the root is made, not the folders above it)"
        )
    if not place.is_dir():
        raise OutputPathError(f"--root {root}: {place} is not a folder; --root takes the folder holding the runs")
    try:
        probe = Path(tempfile.mkdtemp(prefix=".recorder-root-check-", dir=place))
    except OSError as e:
        raise OutputPathError(f"--root {root}: cannot create runs there ({e.strerror or e})") from e
    probe.rmdir()
    return root


def write_failed(path: Path, e: OSError) -> OutputPathError:
    """The error for a write the checks could not foresee (a read-only mount, a full disk, /proc)."""
    return OutputPathError(f"-o {path}: cannot write ({e.strerror or e})")


def _device_or_pipe(path: Path) -> bool:
    """Whether `path` is a character device or FIFO, which `-o` writes through (recorder.output): its name has
    no extension to choose a format by, so the command's first format is written (PNG for plot)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _example(suffixes: tuple[str, ...]) -> str:
    return "out" + (suffixes[0] if suffixes else ".txt")
