"""A run that cannot be written is still replayed and scored: its derived files go to another folder.

Everything under `derived/` is a cache of the events (recorder.derived_state), so a run on a read-only
filesystem, or a copy the user may not write, loses nothing when its caches are written elsewhere: the
command derives and judges the same events, and says in one line where the files went. Nothing is written
into the run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from recorder.errors import LogWriteError
from recorder.store.run import RunDir, derived_dir


def _why_not_writable(run: RunDir) -> str | None:
    """Why no file can be written under the run's derived/ (the operating system's words), or None. A real
    write, not a permission test: root passes every permission check, and a read-only mount refuses root."""
    try:
        fd, name = tempfile.mkstemp(prefix=".write-test-", dir=derived_dir(run))
    except LogWriteError as e:
        cause = e.__cause__
        return cause.strerror if isinstance(cause, OSError) and cause.strerror else str(e)
    except OSError as e:
        return e.strerror or str(e)
    os.close(fd)
    os.unlink(name)
    return None


def writable_run(run: RunDir, output: Path | None = None) -> tuple[RunDir, str | None]:
    """The run as it is when its derived/ can be written. Otherwise the run with its derived files in a new
    folder (beside `output` when the command writes one, else a temporary folder), and the line that says so.
    A symlink planted at derived/ is still refused (UnsafeWriteError), never worked around."""
    why = _why_not_writable(run)
    if why is None:
        return run, None
    prefix = f"{run.path.name}.derived-"
    try:
        elsewhere = Path(tempfile.mkdtemp(prefix=prefix, dir=output.parent if output is not None else None))
    except OSError:  # -o's folder is not writable either: the file itself then says why
        elsewhere = Path(tempfile.mkdtemp(prefix=prefix))
    note = f"{run.derived} cannot be written ({why}): nothing is written into the run; derived files go to {elsewhere}"
    return RunDir(run.path, derived_at=elsewhere), note
