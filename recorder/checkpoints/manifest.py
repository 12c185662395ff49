"""A checkpoint's manifest: one sha256 per shard file, and one over the list (its `root`).

The root is the sha256 of `sha256sum`-style lines ("<sha256>  <relative path>\n", sorted by path), so the
root of a directory's every file equals `recorder.store.run_files.tree_digest` of it: a NeMo-RL import recorded
before manifests existed still matches. A commit event stays small (the root) and can still name the one
shard that differs (the list).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from trainer.policy.errors import CheckpointError


@dataclass(frozen=True, slots=True)
class ShardDigest:
    """One shard file: its path relative to the weights directory, its size and its sha256."""

    path: str
    bytes: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Manifest:
    """Every shard of one checkpoint, sorted by path."""

    shards: tuple[ShardDigest, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "shards", tuple(sorted(self.shards, key=lambda s: s.path)))

    @property
    def root(self) -> str:
        """sha256 over the shard list: one digest for the whole checkpoint."""
        lines = "".join(f"{s.sha256}  {s.path}\n" for s in self.shards)
        return hashlib.sha256(lines.encode()).hexdigest()

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.shards)

    def get(self, path: str) -> ShardDigest | None:
        return next((s for s in self.shards if s.path == path), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "shards": [{"path": s.path, "bytes": s.bytes, "sha256": s.sha256} for s in self.shards],
        }

    @classmethod
    def from_dict(cls, doc: object) -> Manifest:
        """The manifest a JSON document describes; CheckpointError when it is malformed or its root disagrees."""
        if not isinstance(doc, dict) or not isinstance(doc.get("shards"), list):
            raise CheckpointError(f"manifest {doc!r:.80}: expected {{'root': ..., 'shards': [...]}}")
        shards = []
        for s in doc["shards"]:
            if not (
                isinstance(s, dict)
                and isinstance(s.get("path"), str)
                and isinstance(s.get("bytes"), int)
                and not isinstance(s.get("bytes"), bool)
                and isinstance(s.get("sha256"), str)
            ):
                raise CheckpointError(f"manifest shard {s!r:.80}: expected path, bytes and sha256")
            shards.append(ShardDigest(s["path"], s["bytes"], s["sha256"]))
        manifest = cls(tuple(shards))
        if "root" in doc and doc["root"] != manifest.root:
            raise CheckpointError(
                f"manifest root {str(doc['root'])[:16]}... is not the digest of its shard list "
                f"({manifest.root[:16]}...): the manifest was altered"
            )
        return manifest
