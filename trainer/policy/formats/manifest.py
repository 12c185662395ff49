"""What a load read: one digest per file, one over the list (a Merkle-style root)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardDigest:
    """One file of a checkpoint: its path relative to the checkpoint, size and sha256."""

    file: str
    bytes: int
    sha256: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """Every file a load read, sorted by name."""

    shards: tuple[ShardDigest, ...]

    @property
    def root(self) -> str:
        """sha256 over the "name size sha256" lines: one value that changes when any file does."""
        text = "".join(f"{s.file} {s.bytes} {s.sha256}\n" for s in self.shards)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.shards)


def digest_file(root: Path, path: Path) -> ShardDigest:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return ShardDigest(file=str(path.relative_to(root)), bytes=path.stat().st_size, sha256=h.hexdigest())


def manifest_of(root: Path, files: list[Path]) -> Manifest:
    return Manifest(shards=tuple(digest_file(root, p) for p in sorted(files)))
