"""Removing a run from its root: the whole folder, or nothing of it.

A run is first renamed aside to `<root>/.removing-<name>-<hex>` (one rename: the history stops listing it at
that instant), then deleted. Deletion never follows a link and never crosses into another file system: a link
inside the run is removed as a link, and a run holding a mount point is refused before anything is touched.

A run someone vouches for is kept unless the user insists: a signed run (its segments open with a key, or it has
a signed-segments manifest), a run with segments adopted on resume, and a run with an open segment (its writer may
still be running) are refused with one line naming `--force`. Nothing is recorded in any run: the other runs'
events stay what they were, and a root's packs (recorder.history.compact) simply stop serving the removed run's
rows, which the next `recorder compact` drops.
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from recorder.errors import DataError, InputError, LogWriteError
from recorder.store.run import REMOVING_PREFIX, RunDir, fsync_dir


class RunKeptError(DataError):
    """A run `recorder rm` keeps unless forced: signed, adopted or open."""


@dataclass(frozen=True)
class Removed:
    """What `remove_run` deleted."""

    run_id: str
    path: Path
    files: int
    bytes: int
    packed: bool  # the root's packs held its rows (no longer read; dropped by the next compact)


def kept_because(run: RunDir) -> str | None:
    """Why `run` is kept unless forced, or None. Reads every segment once (no facts): a damaged segment is no
    reason to keep a run, but a key in any segment is."""
    from recorder.store.signed_segments import ManifestError, adopted_segments, manifest_path, read_manifest
    from recorder.verify import verify_run
    from recorder.verify.trust import run_key

    report = verify_run(run, facts=False, trusted=None, untrusted_ok=True)
    adopted = adopted_segments(run)
    if adopted:
        return f"its segments {', '.join(sorted(adopted))} were adopted on resume (they hold a signed record)"
    key = run_key(report.segments)
    if key is not None:
        from recorder.signing import fingerprint

        return f"it is signed (key {fingerprint(key)})"
    try:
        signed_list = read_manifest(run) is not None
    except ManifestError:
        signed_list = True
    if signed_list:
        return f"it has a signed-segments manifest ({manifest_path(run).name})"
    live = [s.name for s in report.segments if not s.closed]
    if live:
        return f"segment {live[0]} is open: its writer may still be running (a killed writer leaves it so too)"
    return None


def remove_run(path: Path, *, force: bool = False) -> Removed:
    """Delete the run at `path` whole. Refused, touching nothing: a path that is a link or no run
    (InputError), a run holding a mount point (InputError), a kept run unless `force` (RunKeptError)."""
    from recorder.history.compact import read_packs
    from recorder.store.reader import recorded_run_id

    if path.is_symlink():
        raise InputError(f"{path}: is a link to {os.readlink(path)}; give the run's own folder (rm removes it whole)")
    run = RunDir.open(path)
    files, size = _census(run.path)
    if not force and (why := kept_because(run)) is not None:
        raise RunKeptError(f"{path}: kept, because {why}; `recorder rm --force {path}` removes it anyway")
    try:
        run_id = recorded_run_id(run)
    except Exception:  # a damaged first segment: the folder's name is all that names it
        run_id = run.path.name
    packed = any(run_id in p.runs for p in read_packs(run.path.parent))
    aside = run.path.parent / f"{REMOVING_PREFIX}{run.path.name}-{secrets.token_hex(4)}"
    try:
        os.rename(run.path, aside)
        fsync_dir(run.path.parent)
    except OSError as e:
        raise LogWriteError(f"{path}: cannot remove the run ({e.strerror}); nothing of it was removed") from e
    try:
        shutil.rmtree(aside)
        fsync_dir(run.path.parent)
    except OSError as e:
        raise LogWriteError(
            f"{path}: moved aside to {aside} (no command reads it) but not all deleted ({e.strerror}); "
            f"delete that folder by hand"
        ) from e
    return Removed(run_id, run.path, files, size, packed)


def _census(top: Path) -> tuple[int, int]:
    """(files, bytes) under `top`, links counted as entries and never followed; InputError at a mount point,
    since deleting it would delete another file system's files."""
    device = top.lstat().st_dev
    files = size = 0
    stack = [top]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False):
                    if info.st_dev != device:
                        raise InputError(
                            f"{entry.path}: another file system is mounted there; unmount it before removing the run"
                        )
                    stack.append(Path(entry.path))
                else:
                    files += 1
                    size += info.st_size
    return files, size
