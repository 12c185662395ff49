"""Files a run's events name: resolved only inside the run directory, and hashed."""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath

from recorder.store.run import RunDir
from recorder.untrusted.copy_temp_files import is_copy_temp
from recorder.untrusted.tree_walk import files_under


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def tree_digest(directory: Path) -> tuple[str, int]:
    """(sha256 of the `sha256sum`-style manifest of every file under `directory`, total bytes); the tree is
    walked by `recorder.untrusted.tree_walk` (bounded in depth, never through a link to a folder). A copy
    tool's temporary file (recorder.untrusted.copy_temp_files) is no part of the weights, as the loader's
    manifest leaves it out too."""
    lines, total = [], 0
    found = [f for f in files_under(directory) if not is_copy_temp(f.relative_to(directory))]
    for f in sorted(found, key=lambda p: p.relative_to(directory).as_posix()):
        h = hashlib.sha256()
        with open(f, "rb") as stream:
            while block := stream.read(1 << 20):
                h.update(block)
        lines.append(f"{h.hexdigest()}  {f.relative_to(directory).as_posix()}\n")
        total += f.stat().st_size
    return hashlib.sha256("".join(lines).encode()).hexdigest(), total


def inside(run: RunDir, rel: object) -> Path | None:
    """`rel` resolved inside the run directory (symlinks followed), or None if it is absolute or leaves it."""
    if not isinstance(rel, str) or not rel or PurePosixPath(rel).is_absolute() or Path(rel).is_absolute():
        return None
    root = run.path.resolve()
    target = (root / Path(*PurePosixPath(rel).parts)).resolve()
    return target if target == root or root in target.parents else None


def normalized(rel: str) -> bool:
    """Whether `rel` is a plain relative POSIX path: no `.` or `..` parts, no empty parts, no backslash. A
    path the writer records is always this; another spelling of the same file is an edit."""
    parts = rel.split("/")
    return bool(rel) and "\\" not in rel and all(p not in ("", ".", "..") for p in parts)
