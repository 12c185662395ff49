"""Whether the code that ran is a commit's: each file's recorded sha256 against its blob in HEAD.

`git status` judges a file by the index (its stat cache and flags): `git update-index --assume-unchanged`
or `--skip-worktree` hides an edit, and an untracked or ignored file is not counted. Comparing the bytes
that ran with the commit's blobs (`git cat-file --batch`, one process for all files) hides nothing: a file
whose bytes differ is modified, a file the commit does not hold (untracked, ignored, only staged) is named
as not in the commit. Bytes are compared as they are: a file git converts on checkout (autocrlf, a filter)
counts as modified, since what ran is not the commit's bytes.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

_TIMEOUT_S = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeState:
    """ROOT's commit and how the files that ran differ from it (None, (), (): not a git checkout)."""

    commit: str | None
    modified: tuple[str, ...]  # relative to ROOT: bytes that ran differ from the commit's blob
    untracked: tuple[str, ...]  # relative to ROOT: the commit holds no such file
    tracked_edits: bool | None  # `git status` reports tracked files that differ (files that did not run too)

    @property
    def dirty(self) -> bool | None:
        if self.commit is None:
            return None
        return bool(self.modified or self.untracked or self.tracked_edits)


def tree_state(root: Path, files: list[tuple[str, str]]) -> TreeState:
    """ROOT's HEAD commit and, for `files` ((path relative to ROOT, sha256 of the bytes that ran)), which
    differ from their blob in it and which it does not hold."""
    commit = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    prefix = _git(root, "rev-parse", "--show-prefix")
    if commit is None or prefix is None:
        return TreeState(commit=None, modified=(), untracked=(), tracked_edits=None)
    paths = sorted({p for p, _ in files})
    blobs = _blob_hashes(root, commit, [prefix + p for p in paths])
    modified, missing = set(), set()
    for path, sha in files:
        blob = blobs[prefix + path]
        if blob is None:
            missing.add(path)
        elif blob != sha:
            modified.add(path)
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return TreeState(
        commit=commit,
        modified=tuple(sorted(modified)),
        untracked=tuple(sorted(missing)),
        tracked_edits=None if status is None else bool(status),
    )


def _blob_hashes(root: Path, commit: str, paths: list[str]) -> dict[str, str | None]:
    """{path relative to the repository: sha256 of its blob in `commit`, None when it holds none}."""
    if not paths:
        return {}
    query = "".join(f"{commit}:{p}\n" for p in paths).encode()
    try:
        done = subprocess.run(
            ["git", "cat-file", "--batch"], cwd=root, input=query, capture_output=True, timeout=_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError):
        return dict.fromkeys(paths)
    if done.returncode != 0:
        return dict.fromkeys(paths)
    out, at = done.stdout, 0
    found: dict[str, str | None] = {}
    for path in paths:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if header[-1] in (b"missing", b"ambiguous"):  # "<name> missing": the commit holds no such path
            found[path] = None
            continue
        kind, size = header[1], int(header[2])  # "<oid> <type> <size>", then the content and a newline
        found[path] = hashlib.sha256(out[at : at + size]).hexdigest() if kind == b"blob" else None
        at += size + 1
    return found


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
