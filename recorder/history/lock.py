"""One compaction at a time per root.

Two `recorder compact` runs over one root would write the same temporary files and delete each other's
packs. The first holds an exclusive `flock` on `<root>/.compact.lock`; a second one says that it waits, then
waits (the lock is released when the holder exits, even if it is killed).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from recorder.errors import LogWriteError

LOCK_NAME = ".compact.lock"


@contextmanager
def compaction_lock(root: Path, on_wait: Callable[[Path], None]) -> Iterator[None]:
    """Hold the root's compaction lock; `on_wait(lock_path)` is called once if another process holds it."""
    path = root / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as e:
        raise LogWriteError(f"{path}: cannot create the compaction lock ({e.strerror})") from e
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait(path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
