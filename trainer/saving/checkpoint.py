"""Weights-only checkpoints: `checkpoints/step_NNNNNNN/` with model.safetensors (the weight-update time in
its metadata), config.json and tokenizer.json. Written to a temporary directory, fsynced, renamed, then
committed (the caller's `on_commit` appends the checkpoint_committed event). Never pickle.

`CheckpointWriter` saves asynchronously by default: the loop is blocked only while the weights are copied
to host memory (and while waiting for a free slot when two writes are already pending); a background
thread serializes, hashes, fsyncs, renames, fingerprints and commits. The copies go into one host buffer
made at the first save and reused after (trainer/saving/snapshot_buffer.py; pinned, with non-blocking copies, when
the weights are on a GPU). `sync=True` does all of it inline.
A failed write is never committed: the error is kept and raised by `check()` / `close()`.
"""

from __future__ import annotations

import copy
import hashlib
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recorder.checkpoints.fingerprint import fingerprint_record
from recorder.checkpoints.recorder_format import step_dirname, write_checkpoint
from recorder.errors import RecorderError
from recorder.store.kinds import CheckpointCommitted
from trainer.errors import CheckpointError
from trainer.policy.tokenizer import Tokenizer
from trainer.saving.snapshot_buffer import Snapshot, SnapshotBuffer


@dataclass(frozen=True)
class SavedCheckpoint:
    """What a committed checkpoint's event records (see schemas/catalogue.toml, checkpoint_committed)."""

    step: int
    path: Path
    sha256: str
    bytes: int
    weight_update_ns: int
    save_begin_ns: int
    save_end_ns: int
    blocked_ns: int
    fingerprint: dict[str, Any]
    dtype: str
    files: dict[str, str] = field(default_factory=dict)  # config.json, tokenizer.json -> sha256
    manifest: dict[str, Any] | None = None  # a sharded checkpoint's shards (trainer/saving/sharded_checkpoint.py)


def snapshot(model: Any) -> dict[str, Any]:
    """A host copy of the weights that later optimizer steps cannot change."""
    return {k: v.detach().to("cpu", copy=True).contiguous() for k, v in model.state_dict().items()}


_DONE = object()


class _Job:
    """One pending save; `blocked_ns` is filled in by the caller once its put() returned."""

    def __init__(self, step: int, snapshot: Snapshot, weight_update_ns: int, begin_ns: int) -> None:
        self.step, self.snapshot, self.weight_update_ns, self.begin_ns = step, snapshot, weight_update_ns, begin_ns
        self.blocked_ns = 0
        self.released = threading.Event()


class CheckpointWriter:
    """Saves checkpoints of one run, in order; `on_commit` runs after each one is durably in place."""

    def __init__(
        self,
        checkpoints_dir: Path,
        model: Any,
        tokenizer: Tokenizer,
        *,
        sync: bool,
        on_commit: Callable[[SavedCheckpoint], None],
        max_pending: int = 2,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.dir = Path(checkpoints_dir)
        self.tokenizer = tokenizer
        self.config_json = model.config.to_json_string()
        self.tokenizer_json = tokenizer.to_json()
        # hashed into every commit like the weights: an edited config.json or tokenizer fails verify
        self.files = {
            "config.json": hashlib.sha256(self.config_json.encode()).hexdigest(),
            "tokenizer.json": hashlib.sha256(self.tokenizer_json.encode()).hexdigest(),
        }
        self.sync = sync
        self.on_commit = on_commit
        self.clock = clock
        self.error: Exception | None = None  # the first failure of the background writer
        self.committed: list[SavedCheckpoint] = []
        # A second model instance: the background thread loads each snapshot into it to fingerprint.
        self._shadow = copy.deepcopy(model).eval()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_pending)
        # Snapshots alive at once: the queued writes and the one being written (one when synchronous).
        self._slots = 1 if sync else max_pending + 1
        self._buffer: SnapshotBuffer | None = None  # laid out at the first save, from the model saved
        self._thread: threading.Thread | None = None
        if not sync:
            self._thread = threading.Thread(target=self._worker, name="checkpoint-writer", daemon=True)
            self._thread.start()

    def save(self, model: Any, *, step: int, weight_update_ns: int) -> int:
        """Save the model's current weights as step `step`. Returns the ns the caller was blocked."""
        self.check()
        begin = self.clock()
        if self._buffer is None:
            self._buffer = SnapshotBuffer(model, self._slots)
        job = _Job(step, self._buffer.take(model), weight_update_ns, begin)
        if self.sync:
            try:
                self._write(job)
            finally:
                self._buffer.release(job.snapshot)
            return self.clock() - begin
        self._queue.put(job)  # blocks while max_pending writes are in flight
        job.blocked_ns = self.clock() - begin
        job.released.set()
        return job.blocked_ns

    def check(self) -> None:
        """Raise the first background failure, if any."""
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Wait for pending writes; raise the first failure."""
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(_DONE)
            self._thread.join()
        self.check()

    def drain(self) -> None:
        """Wait until every queued write is done (the writer stays open); raise the first failure."""
        if self._thread is not None:
            self._queue.join()
        self.check()

    def _worker(self) -> None:
        while (job := self._queue.get()) is not _DONE:
            try:
                if self.error is None:  # after a failure nothing more is committed
                    self._write(job)
            except Exception as e:
                self.error = _as_checkpoint_error(e, job.step)
            finally:
                assert self._buffer is not None
                self._buffer.release(job.snapshot)
                self._queue.task_done()
        self._queue.task_done()

    def _write(self, job: _Job) -> None:
        step, tensors, weight_update_ns, begin = job.step, job.snapshot.tensors, job.weight_update_ns, job.begin_ns
        try:
            sha, size = write_checkpoint(
                self.dir / step_dirname(step),
                tensors,
                config_json=self.config_json,
                tokenizer_json=self.tokenizer_json,
                weight_update_ns=weight_update_ns,
                step=step,
            )
            self._shadow.load_state_dict(tensors, strict=True)
            fp = fingerprint_record(self._shadow, self.tokenizer)
        except Exception as e:
            error = _as_checkpoint_error(e, step)
            if self.sync:
                if error is e:
                    raise
                raise error from e
            self.error = error
            return
        end = self.clock()
        if not self.sync:
            job.released.wait()  # the caller records how long it was blocked right after queueing
        dtype = str(next(iter(tensors.values())).dtype).removeprefix("torch.")
        saved = SavedCheckpoint(
            step=step,
            path=self.dir / step_dirname(step),
            sha256=sha,
            bytes=size,
            weight_update_ns=weight_update_ns,
            save_begin_ns=begin,
            save_end_ns=end,
            blocked_ns=end - begin if self.sync else job.blocked_ns,
            fingerprint=fp,
            dtype=dtype,
            files=dict(self.files),
        )
        self.committed.append(saved)
        self.on_commit(saved)


def _as_checkpoint_error(e: Exception, step: int) -> Exception:
    """What the training loop raises for a failed save: our errors as they are, anything else wrapped."""
    if isinstance(e, RecorderError):
        return e
    wrapped = CheckpointError(f"step {step}: saving the checkpoint failed: {type(e).__name__}: {e}")
    wrapped.__cause__ = e
    return wrapped


def checkpoint_payload(saved: SavedCheckpoint, run_path: Path) -> CheckpointCommitted:
    """The payload of a checkpoint_committed event."""
    return CheckpointCommitted(
        path=str(saved.path.relative_to(run_path)),
        sha256=saved.sha256,
        bytes=saved.bytes,
        weight_update_ns=saved.weight_update_ns,
        save_begin_ns=saved.save_begin_ns,
        save_end_ns=saved.save_end_ns,
        blocked_ns=saved.blocked_ns,
        fingerprint=saved.fingerprint,
        format="torch-dcp" if saved.manifest is not None else "safetensors",
        dtype=saved.dtype,
        files=saved.files or None,
        manifest=saved.manifest,
    )
