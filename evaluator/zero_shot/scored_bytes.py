"""Whether the checkpoint a zero-shot result scored still holds the bytes it scored.

A result records the manifest of the shards it read (each shard's path, size and sha256). Weights replaced
after scoring would leave the result claiming scores for a checkpoint that no longer holds those weights, so
`recorder collect` compares each shard with the manifest before it shows the result: its size always (a
`stat`), its sha256 while the bytes hashed in one command stay within `REHASH_BYTES`; past it the shards
left are compared by size alone and the command says which results were not rehashed. A checkpoint whose
directory is gone (a result kept elsewhere, a checkpoint deleted) is named, not judged: a result says
which weights it scored, and nothing on disk claims otherwise.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recorder.results.zero_shot import ZeroShotDocument, ZeroShotResults
from recorder.untrusted_files import kind_of

REHASH_BYTES = 8 * 1024**3  # about a minute of sha256 on one core: the most bytes one command rehashes
CHUNK = 1 << 20


@dataclass
class Rehash:
    """What one command may still hash, and the results it compared by size alone."""

    budget: int = REHASH_BYTES
    by_size: list[str] = field(default_factory=list)  # labels of results whose shards were only sized
    gone: list[str] = field(default_factory=list)  # labels of results whose checkpoint directory is gone


def changed_since_scored(doc: ZeroShotDocument, rehash: Rehash) -> str | None:
    """Why `doc`'s checkpoint no longer holds the bytes it scored (a shard missing, resized or rehashed to
    another sha256), or None. A recorder step's result is held by `recorder verify` (rule commit-sha)."""
    if not isinstance(doc, ZeroShotResults):
        return None
    shards = doc.checkpoint.manifest.get("shards")
    base = Path(doc.checkpoint.path)
    if not isinstance(shards, list) or not base.is_dir():
        rehash.gone.append(doc.label)
        return None
    base = _weights_dir(base, shards)
    sized_only = False
    for shard in shards:
        if not isinstance(shard, dict):
            return "checkpoint changed since scored: its manifest lists no shard paths"
        path = base / str(shard.get("path"))
        why = _differs(path, shard.get("bytes"), shard.get("sha256"), rehash)
        if why == "":
            sized_only = True
        elif why is not None:
            return f"checkpoint changed since scored: {shard.get('path')} {why}"
    if sized_only:
        rehash.by_size.append(doc.label)
    return None


def _weights_dir(base: Path, shards: list[Any]) -> Path:
    """Where the manifest's paths start: the checkpoint's directory, or the weights folder its format keeps
    inside it (detected as loading detects it)."""
    from trainer.policy.checkpoints.readers import detect
    from trainer.policy.errors import CheckpointError

    first = shards[0].get("path") if shards and isinstance(shards[0], dict) else None
    if first is None or os.path.lexists(base / str(first)):
        return base
    try:
        return detect(base).weights_dir
    except (CheckpointError, OSError):
        return base  # no longer a checkpoint: its shards are missing


def _differs(path: Path, size: object, sha256: object, rehash: Rehash) -> str | None:
    """Why the shard at `path` is not the one recorded; "" when its size matches but the budget left no
    room to hash it; None when it is the same."""
    try:
        st = path.lstat()
    except OSError:
        return "is missing"
    if not stat.S_ISREG(st.st_mode):
        return f"is {kind_of(st.st_mode)}, not a file"
    if st.st_size != size:
        return f"is {st.st_size} bytes, {size} when scored"
    if st.st_size > rehash.budget:
        return ""
    rehash.budget -= st.st_size
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    if digest.hexdigest() != sha256:
        return f"has sha256 {digest.hexdigest()[:16]}..., {str(sha256)[:16]}... when scored"
    return None
