"""Every file a command writes at a path the user names (`-o`): never through a symlink, never half-written.

The bytes go to a new temporary file beside the target, created with O_EXCL | O_NOFOLLOW (so nothing that
already exists, a planted symlink included, is opened), are fsynced, and the file is renamed over the
target: a symlink at the target is replaced by the file, and whatever it pointed to is left as it was.
The derived files under a run use the same steps (`recorder.run.write_derived`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from recorder.errors import LogWriteError


@contextmanager
def output_file(path: Path) -> Iterator[IO[bytes]]:
    """A binary file to write `path`'s new content to; it becomes `path` when the block ends without error
    (on error, nothing is left behind and `path` is unchanged)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        raise LogWriteError(f"{path}: cannot write it ({e.strerror})") from e
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise LogWriteError(f"{path}: cannot write it ({e.strerror})") from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_output(path: Path, data: bytes | str) -> None:
    """`path` holds `data` (text as UTF-8), written as `output_file` writes."""
    with output_file(path) as f:
        f.write(data.encode() if isinstance(data, str) else data)
