"""Which `.distcp` files belong to a torch DCP checkpoint: the ones its `.metadata` names.

A DCP save never deletes what was in its directory before: a save by fewer ranks over an older one leaves
the older ranks' shards behind, and nothing stops anyone adding files. The loader reads only the shards
`.metadata` places storage in, so only those are the checkpoint: a `.distcp` file that no `.metadata`
beside it names is left out of the manifest (never hashed, never committed, never read) and named by the
import, rather than refused: it cannot change what is evaluated.
"""

from __future__ import annotations

from pathlib import Path

from recorder.checkpoints.detect import DCP_METADATA
from recorder.checkpoints.torch_dcp.safe_metadata import MAX_METADATA_BYTES, shared_metadata
from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded
from trainer.policy.errors import CheckpointError

SHARD_SUFFIX = ".distcp"


def named_shards(directory: Path) -> set[str]:
    """The file names `directory`'s `.metadata` places any storage in (none without a `.metadata`);
    CheckpointError for one that is not a regular file of DCP metadata."""
    metadata = directory / DCP_METADATA
    if not metadata.is_file():
        return set()
    try:
        data = read_bounded(metadata, MAX_METADATA_BYTES, "torch DCP .metadata", follow=True)
    except IrregularFileError as e:
        raise CheckpointError(str(e)) from e
    return {str(info.relative_path) for info in shared_metadata(metadata, data).storage_data.values()}


def split_shards(files: list[Path]) -> tuple[list[Path], list[Path]]:
    """(`files` without the `.distcp` files no `.metadata` in their directory names, those left out)."""
    named: dict[Path, set[str]] = {}
    kept, stray = [], []
    for f in files:
        if f.suffix == SHARD_SUFFIX:
            if f.parent not in named:
                named[f.parent] = named_shards(f.parent)
            if f.name not in named[f.parent]:
                stray.append(f)
                continue
        kept.append(f)
    return kept, stray


def missing_shards(directory: Path) -> list[str]:
    """The shard files `directory`'s `.metadata` places storage in that are not there (a save that did not
    finish), by name; CheckpointError for a `.metadata` that is not a regular file of DCP metadata."""
    return sorted(name for name in named_shards(directory) if not (directory / name).is_file())
