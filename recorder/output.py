"""Every file a command writes at a path the user names (`-o`): never through a symlink, never half-written,
and nothing the user owns replaced.

What is at the path decides how it is written:
- nothing, a regular file or a symlink: the bytes go to a new temporary file beside the target, created with
  O_EXCL | O_NOFOLLOW under a name no file has (so nothing that already exists, a planted symlink included, is
  opened, truncated or deleted), are fsynced, and the file is renamed over the target: a symlink at the
  target is replaced by the file, and whatever it pointed to is left as it was;
- a character device or a FIFO (`-o /dev/null`, `-o /dev/stdout`, a named pipe a reader waits on): written
  through, as a shell's `>` writes, and never replaced;
- anything else (a directory, a block device, a socket): refused, nothing written.
A write that fails (a full disk, `-o /dev/full`) is a LogWriteError naming the path: exit 1, one line.
The derived files under a run use the same steps (`recorder.store.run.write_derived`).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from recorder.errors import LogWriteError, UnsafeWriteError

# Tries at a fresh temporary name before giving up: each name has 64 random bits, so a second try means
# someone is creating files with our names on purpose.
_NAME_TRIES = 8


def _written_through(mode: int) -> bool:
    """Whether what has `mode` is written through rather than replaced (a device or a pipe is not a file)."""
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _what_is_at(path: Path) -> int | None:
    """The mode of what is at `path` itself (a symlink is not followed); None when nothing is there."""
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        raise LogWriteError(f"{path}: cannot write it ({e.strerror})") from e


@contextmanager
def output_file(path: Path) -> Iterator[IO[bytes]]:
    """A binary file to write `path`'s new content to; it becomes `path` when the block ends without error
    (on error, nothing is left behind and `path` is unchanged). A device or FIFO at `path` is written to."""
    mode = _what_is_at(path)
    if mode is not None and _written_through(mode):
        with _through(path) as f:
            yield f
        return
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise UnsafeWriteError(f"{path}: is {_kind(mode)}; give the path of a file to write")
    with _replacing(path) as f:
        yield f


@contextmanager
def _through(path: Path) -> Iterator[IO[bytes]]:
    """`path`, a character device or FIFO, opened for writing as it is (never created, truncated or renamed)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NOCTTY)
    except OSError as e:
        raise LogWriteError(f"{path}: cannot write it ({e.strerror})") from e
    try:
        if not _written_through(os.fstat(fd).st_mode):  # swapped for a file since it was looked at
            raise UnsafeWriteError(f"{path}: changed while it was being opened; run the command again")
        with os.fdopen(fd, "wb") as f:
            fd = -1
            yield f
            f.flush()
    except OSError as e:
        raise LogWriteError(f"{path}: cannot write it ({e.strerror})") from e
    finally:
        if fd >= 0:
            os.close(fd)


def _new_beside(path: Path) -> tuple[Path, int]:
    """A temporary file created here, beside `path`, under a name nothing had: its path and descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    for _ in range(_NAME_TRIES):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            return tmp, os.open(tmp, flags, 0o644)
        except FileExistsError:
            continue
        except OSError as e:
            raise LogWriteError(f"{path}: cannot write it ({e.strerror})") from e
    raise LogWriteError(f"{path}: cannot write it (no free temporary name beside it)")


@contextmanager
def _replacing(path: Path) -> Iterator[IO[bytes]]:
    """A new file that is renamed over `path` once written and fsynced; removed (it is ours) on failure."""
    tmp, fd = _new_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        with suppress(OSError):  # a read-only filesystem refuses the cleanup too
            tmp.unlink(missing_ok=True)
        raise LogWriteError(f"{path}: cannot write it ({e.strerror})") from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_output(path: Path, data: bytes | str) -> None:
    """`path` holds `data` (text as UTF-8), written as `output_file` writes."""
    with output_file(path) as f:
        f.write(data.encode() if isinstance(data, str) else data)
