"""A sharded checkpoint written through torch DCP by every rank, each hashing what it writes as it writes it.

Every rank writes its own `__R_0.distcp` (FSDP2's local shards) into one temporary directory; rank 0 also
writes `.metadata`. Each file's sha256 is computed from the bytes on their way to the file (no re-read), the
files are fsynced, the digests gathered on rank 0, which writes config.json and tokenizer.json, fsyncs the
directory and renames it into place: a checkpoint directory exists once every shard is durable, never half.
The manifest (recorder.checkpoints.manifest) covers `.metadata` and every shard.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from recorder.checkpoints.manifest import Manifest, ShardDigest
from recorder.store.run import fsync_dir
from trainer.policy.errors import CheckpointError


class _HashingStream(io.RawIOBase):
    """A file opened for writing whose every written byte also goes into a sha256."""

    def __init__(self, raw: Any) -> None:
        super().__init__()
        self.raw = raw
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        n = self.raw.write(view)
        self.sha.update(view[:n])
        self.size += n
        return int(n)

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return int(self.raw.tell())

    def fileno(self) -> int:
        return int(self.raw.fileno())

    def flush(self) -> None:
        if not self.raw.closed:
            self.raw.flush()

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
            super().close()


def _hashing_filesystem() -> Any:
    from torch.distributed.checkpoint.filesystem import FileSystem

    class HashingFileSystem(FileSystem):
        """torch DCP's file system, recording (bytes, sha256) of every file it writes, by final name."""

        def __init__(self) -> None:
            super().__init__()
            self.digests: dict[str, tuple[int, str]] = {}
            self._lock = threading.Lock()

        @contextmanager
        def create_stream(self, path: str | os.PathLike[str], mode: str) -> Iterator[Any]:
            if "w" not in mode:
                with super().create_stream(path, mode) as stream:
                    yield stream
                return
            with open(path, mode) as raw:
                stream = _HashingStream(raw)
                yield stream
            with self._lock:
                self.digests[Path(path).name] = (stream.size, stream.sha.hexdigest())

        def rename(self, path: str | os.PathLike[str], new_path: str | os.PathLike[str]) -> None:
            super().rename(path, new_path)
            with self._lock:
                if Path(path).name in self.digests:
                    self.digests[Path(new_path).name] = self.digests.pop(Path(path).name)

    return HashingFileSystem()


def write_dcp_checkpoint(
    directory: Path,
    state_dict: dict[str, Any],
    *,
    config_json: str,
    tokenizer_json: str,
    step: int,
    distributed: bool,
) -> Manifest | None:
    """Write this rank's shards of `state_dict` (DTensors: their local shards) into `directory`; every rank
    calls it. -> the manifest of every shard on rank 0 (None on the others), once the directory is in place."""
    import torch.distributed as dist
    from torch.distributed.checkpoint.filesystem import FileSystemWriter
    from torch.distributed.checkpoint.state_dict_saver import save

    rank = dist.get_rank() if distributed else 0
    tmp = directory.parent / f".tmp-{directory.name}-dcp"
    try:
        if rank == 0:
            if directory.exists():
                raise CheckpointError(f"{directory} already exists: a checkpoint is never overwritten")
            shutil.rmtree(tmp, ignore_errors=True)  # a crashed save's leftovers: never committed
            tmp.mkdir(parents=True)
        if distributed:
            dist.barrier()
        writer = FileSystemWriter(str(tmp), sync_files=True)
        fs = _hashing_filesystem()
        writer.fs = fs
        save(state_dict, storage_writer=writer, no_dist=not distributed)
        gathered: list[Any] = [None] * (dist.get_world_size() if distributed else 1)
        if distributed:
            dist.all_gather_object(gathered, fs.digests)
        else:
            gathered[0] = fs.digests
        if rank != 0:
            return None
        digests = {name: d for part in gathered for name, d in part.items()}
        _write_synced(tmp / "config.json", config_json.encode())
        _write_synced(tmp / "tokenizer.json", tokenizer_json.encode())
        fsync_dir(tmp)
        os.rename(tmp, directory)
        fsync_dir(directory.parent)
    except OSError as e:
        if rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointError(f"checkpoint for step {step} could not be written to {directory}: {e}") from e
    return Manifest(tuple(ShardDigest(name, size, sha) for name, (size, sha) in digests.items()))


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
