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

from evaluator.zero_shot.origin.targets import RESULTS
from recorder.results.zero_shot import ZeroShotDocument, ZeroShotResults
from recorder.untrusted.untrusted_files import kind_of

REHASH_BYTES = 8 * 1024**3  # about a minute of sha256 on one core: the most bytes one command rehashes
CHUNK = 1 << 20


@dataclass
class Rehash:
    """What one command may still hash, and the results it compared by size alone."""

    budget: int = REHASH_BYTES
    by_size: list[str] = field(default_factory=list)  # labels of results whose shards were only sized
    gone: list[str] = field(default_factory=list)  # labels of results whose checkpoint directory is gone


def changed_since_scored(doc: ZeroShotDocument, rehash: Rehash, found: Path | None = None) -> str | None:
    """Why `doc`'s checkpoint no longer holds the bytes it scored (a shard missing, resized or rehashed to
    another sha256), or None. The checkpoint is the one the result sits with when it was `found` in a
    checkpoint's (or its run's) eval_results (`beside`), not the path it names: a result copied or moved
    with its checkpoint is held to the copy's bytes. A recorder step's result is held by `recorder verify`
    (rule commit-sha)."""
    if not isinstance(doc, ZeroShotResults):
        return None
    shards = doc.checkpoint.manifest.get("shards")
    base = (beside(found, doc) if found is not None else None) or Path(doc.checkpoint.path)
    if base.is_file():  # a torch.save file: the manifest names it from its directory
        base = base.parent
    if not isinstance(shards, list) or not base.is_dir():
        rehash.gone.append(doc.label)
        return None
    if not all(isinstance(s, dict) for s in shards):
        return "checkpoint changed since scored: its manifest lists no shard paths"
    first_why = None
    for where in _weights_dirs(base, shards):
        why = _compare(where, shards, rehash)
        if why == "":
            rehash.by_size.append(doc.label)
        if not why:
            return None
        first_why = first_why or why
    return f"checkpoint changed since scored: {first_why}" if first_why else None


def beside(results: Path, doc: ZeroShotResults) -> Path | None:
    """The checkpoint a results.json at `results` sits with: above its `eval_results` folder, the checkpoint
    itself (an archive's results), or its run, where the checkpoint is where it was in the recorded run (an
    epoch or snapshot of it); None for a result kept elsewhere (`-o DIR`)."""
    holder = next((p.parent for p in results.parents if p.name == RESULTS), None)
    if holder is None:
        return None
    named, run = Path(doc.checkpoint.path), Path(doc.checkpoint.run)
    if run.is_absolute() and named != run and named.is_relative_to(run):
        return holder / named.relative_to(run)
    return holder


def _compare(where: Path, shards: list[dict[str, Any]], rehash: Rehash) -> str | None:
    """Why the shards under `where` are not the manifest's; None when they are; "" when they are by size,
    not rehashed past the budget."""
    sized_only = False
    for shard in shards:
        why = _differs(where / str(shard.get("path")), shard.get("bytes"), shard.get("sha256"), rehash)
        if why == "":
            sized_only = True
        elif why is not None:
            return f"{shard.get('path')} {why}"
    return "" if sized_only else None


def _weights_dirs(base: Path, shards: list[dict[str, Any]]) -> list[Path]:
    """Where the manifest's paths may start: the checkpoint's directory, else the folders one or two levels
    under it that hold its first shard (a team's archive keeps its weights in `fsdp2_epoch_N/`)."""
    first = str(shards[0].get("path")) if shards else ""
    if not first or os.path.lexists(base / first):
        return [base]
    found = [d for d in _folders(base, 2) if os.path.lexists(d / first)]
    return found or [base]


def _folders(base: Path, depth: int) -> list[Path]:
    """The folders under `base`, `depth` levels at most, sorted, no link followed."""
    out: list[Path] = []
    level = [base]
    for _ in range(depth):
        nxt = []
        for d in level:
            try:
                nxt += sorted(Path(e.path) for e in os.scandir(d) if e.is_dir(follow_symlinks=False))
            except OSError:
                continue
        out += nxt
        level = nxt
    return out


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
