"""The run directory: `<root>/<run_id>/` with `events/`, `checkpoints/` and `derived/`."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from recorder.errors import InputError, LogWriteError, NotARunError, RunExistsError, UnsafeWriteError

DEFAULT_ROOT = Path("runs")

# One rule for every run id, wherever it comes from (--run-id, --into, an imported file's name): a folder name
# that is safe in any shell and file system, and short enough for any path length limit.
RUN_ID_MAX = 128
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
RUN_ID_RULE = f"1 to {RUN_ID_MAX} letters, digits, '-', '_' or '.', starting with a letter or digit"
# A run `recorder rm` has renamed aside on its way out (recorder.history.removal): no longer a run of the root.
REMOVING_PREFIX = ".removing-"


def check_run_id(run_id: str) -> str:
    """`run_id` if it follows the rule, else an InputError that states the rule."""
    if len(run_id) > RUN_ID_MAX or not _RUN_ID.fullmatch(run_id):
        shown = run_id if len(run_id) <= 60 else f"{run_id[:60]}... ({len(run_id)} characters)"
        raise InputError(f"invalid run id {shown!r}: a run id is {RUN_ID_RULE}")
    return run_id


def new_run_id(now_ns: int | None = None) -> str:
    """A sortable, collision-resistant id: UTC time and 4 random hex digits."""
    now = time.gmtime((now_ns if now_ns is not None else time.time_ns()) / 1e9)
    return time.strftime("%Y%m%d-%H%M%S", now) + "-" + secrets.token_hex(2)


@dataclass(frozen=True)
class RunDir:
    """Paths of one run. `create` makes a new one; `open` checks an existing one. `derived_at`: where its
    derived files go instead of `<run>/derived` (a run that cannot be written: recorder.store.read_only_runs)."""

    path: Path
    derived_at: Path | None = None

    @property
    def events(self) -> Path:
        return self.path / "events"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def derived(self) -> Path:
        return self.derived_at if self.derived_at is not None else self.path / "derived"

    @classmethod
    def create(cls, root: Path | str, run_id: str | None = None) -> RunDir:
        """Make `<root>/<run_id>/events/`; an existing run id is refused."""
        run_id = check_run_id(new_run_id() if run_id is None else run_id)
        path = Path(root) / run_id
        if path.exists():
            raise RunExistsError(f"run {run_id!r} already exists at {path}: pick another --run-id")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                path.mkdir()
            except FileExistsError as e:
                raise RunExistsError(f"run {run_id!r} already exists at {path}: pick another --run-id") from e
            (path / "events").mkdir()
            fsync_dir(path.parent)
        except (NotADirectoryError, FileExistsError) as e:  # --root names a file, or a folder above it is one
            raise InputError(f"{root}: not a folder; --root takes the folder holding the runs") from e
        except OSError as e:  # read-only or full filesystem, no permission: say where, not a traceback
            raise LogWriteError(
                f"{path}: cannot create the run directory ({e.strerror}); is --root on a read-only or full filesystem?"
            ) from e
        return cls(path)

    @classmethod
    def open(cls, path: Path | str) -> RunDir:
        """An existing run; a clear error if `path` is missing or is not a run directory."""
        path = Path(path)
        if not path.exists():
            raise NotARunError(f"{path}: no such run directory")
        if not path.is_dir():
            raise NotARunError(f"{path}: not a directory (a run directory holds events/)")
        if not (path / "events").is_dir():
            raise NotARunError(f"{path}: not a run directory (no events/ inside)")
        return cls(path)


def list_runs(root: Path | str) -> list[RunDir]:
    """Every run directory directly under `root`, sorted by name (a run being removed is none)."""
    root = Path(root)
    if not root.is_dir():
        what = "not a folder" if os.path.lexists(root) else "no such root directory"
        raise InputError(f"{root}: {what} (give --root DIR, the folder holding the runs)")
    if (root / "events").is_dir():  # nothing may be written into a run taken for a root (a lock, packs)
        raise InputError(f"{root} is a run directory; --root takes the folder holding runs: --root {root.parent}")
    return [
        RunDir(p) for p in sorted(root.iterdir()) if (p / "events").is_dir() and not p.name.startswith(REMOVING_PREFIX)
    ]


@contextlib.contextmanager
def new_run(root: Path | str, run_id: str | None) -> Iterator[RunDir]:
    """A new run's folder, for the block to write its first events in: all or nothing. When the block fails (a
    full disk refuses the first segment or event) the folder is removed again, since a run without its first
    events is no run: verify could only call it altered."""
    run = RunDir.create(root, run_id)
    try:
        yield run
    except Exception as e:
        shutil.rmtree(run.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            fsync_dir(run.path.parent)
        if not isinstance(e, LogWriteError):
            raise
        cause = e.__cause__
        why = os.strerror(cause.errno) if isinstance(cause, OSError) and cause.errno else str(e)
        raise LogWriteError(
            f"{run.path}: the run's first events could not be written ({why}), so no run was left; "
            "free space (or make --root writable) and run again"
        ) from e


def fsync_dir(path: Path) -> None:
    """Make a directory's entries durable (a created or renamed file survives a power loss)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def derived_dir(run: RunDir, *parts: str) -> Path:
    """`<run>/derived/<parts...>` (or under the run's `derived_at`), created: refused (UnsafeWriteError) if
    any part is a symlink or not a directory, so that no write under derived/ can land outside the run."""
    directories = [run.derived]
    for part in parts:
        directories.append(directories[-1] / part)
    for directory in directories:
        if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
            raise UnsafeWriteError(
                f"{directory}: a symlink or not a directory; nothing is written through it (writes under "
                "derived/ stay inside the run). Remove it and run again"
            )
        try:
            directory.mkdir(exist_ok=True)
        except OSError as e:
            raise LogWriteError(f"{directory}: cannot create it ({e.strerror})") from e
    return directory


def write_derived(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write a file under a `derived_dir` atomically: a new temporary file (O_EXCL | O_NOFOLLOW), fsync,
    rename over `path` (a symlink there is replaced, never followed). `data`: the bytes, or chunks of them
    written as they are produced (a long run's mllog is never held whole)."""
    chunks = [data] if isinstance(data, bytes) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, flags, 0o644)
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):  # a read-only filesystem refuses the cleanup too
            tmp.unlink(missing_ok=True)
        raise LogWriteError(f"{path}: cannot write it ({e.strerror})") from e
    except BaseException:  # the chunks' producer failed (or Ctrl-C): nothing half-written is left behind
        tmp.unlink(missing_ok=True)
        raise
