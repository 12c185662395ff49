"""Weights-only checkpoints: `checkpoints/step_NNNNNNN/` with model.safetensors (the weight-update time in
its metadata), config.json and tokenizer.json. Written to a temporary directory, fsynced, renamed, then
committed (the caller's `on_commit` appends the checkpoint_committed event). Never pickle.

`CheckpointWriter` saves asynchronously by default: the loop is blocked only while the weights are copied
to host memory (and while waiting for a free slot when two writes are already pending); a background
thread serializes, hashes, fsyncs, renames, fingerprints and commits. `sync=True` does all of it inline.
A failed write is never committed: the error is kept and raised by `check()` / `close()`.
"""

from __future__ import annotations

import copy
import hashlib
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.errors import RecorderError
from recorder.run import fsync_dir

from trainer.errors import CheckpointError
from trainer.fingerprint import fingerprint_record
from trainer.tokenizer import Tokenizer, from_json

WEIGHTS = "model.safetensors"


def step_dirname(step: int) -> str:
    return f"step_{step:07d}"


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


def snapshot(model: Any) -> dict[str, Any]:
    """A host copy of the weights that later optimizer steps cannot change."""
    return {k: v.detach().to("cpu", copy=True).contiguous() for k, v in model.state_dict().items()}


def write_checkpoint(directory: Path, tensors: dict[str, Any], *, config_json: str, tokenizer_json: str,
                     weight_update_ns: int, step: int) -> tuple[str, int]:
    """Write the three files into `directory` atomically (temp dir, fsync, rename). -> (sha256, bytes)."""
    from safetensors.torch import save

    tmp = directory.parent / f".tmp-{directory.name}-{os.getpid()}-{threading.get_ident()}"
    try:
        if directory.exists():
            raise CheckpointError(f"{directory} already exists: a checkpoint is never overwritten")
        tmp.mkdir(parents=True)
        data = save(tensors, metadata={"weight_update_ns": str(weight_update_ns), "step": str(step),
                                       "format": "pt"})
        _write_synced(tmp / WEIGHTS, data)
        _write_synced(tmp / "config.json", config_json.encode())
        _write_synced(tmp / "tokenizer.json", tokenizer_json.encode())
        fsync_dir(tmp)
        os.rename(tmp, directory)
        fsync_dir(directory.parent)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CheckpointError(f"checkpoint for step {step} could not be written to {directory}: {e}") from e
    return hashlib.sha256(data).hexdigest(), len(data)


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, streamed."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_metadata(path: Path) -> dict[str, str]:
    """The safetensors metadata of a checkpoint directory's weights (holds weight_update_ns and step)."""
    from safetensors import SafetensorError, safe_open

    weights = Path(path) / WEIGHTS
    if not weights.is_file():
        raise CheckpointError(f"{weights}: missing; is {path} a checkpoint directory?")
    try:
        with safe_open(str(weights), framework="pt") as f:
            return dict(f.metadata() or {})
    except (OSError, SafetensorError) as e:
        raise CheckpointError(f"{weights}: not a readable safetensors file: {e}") from e


def load_checkpoint(path: Path | str) -> tuple[Any, Tokenizer]:
    """(model, tokenizer) from a checkpoint directory; weights via safetensors only (never unpickled)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM

    path = Path(path)
    for name in (WEIGHTS, "config.json", "tokenizer.json"):
        if not (path / name).is_file():
            raise CheckpointError(f"{path / name}: missing; a checkpoint holds {WEIGHTS}, config.json, tokenizer.json")
    try:
        config = AutoConfig.from_pretrained(str(path))
        model = AutoModelForCausalLM.from_config(config).float()
        state = load_file(str(path / WEIGHTS))
        model.load_state_dict(state, strict=True)
    except (OSError, ValueError, RuntimeError, SafetensorError) as e:  # SafetensorError: not a safetensors file
        raise CheckpointError(f"{path}: cannot load the checkpoint: {e}") from e
    model.eval()
    return model, from_json((path / "tokenizer.json").read_text())


_DONE = object()


class _Job:
    """One pending save; `blocked_ns` is filled in by the caller once its put() returned."""

    def __init__(self, step: int, tensors: dict[str, Any], weight_update_ns: int, begin_ns: int) -> None:
        self.step, self.tensors, self.weight_update_ns, self.begin_ns = step, tensors, weight_update_ns, begin_ns
        self.blocked_ns = 0
        self.released = threading.Event()


class CheckpointWriter:
    """Saves checkpoints of one run, in order; `on_commit` runs after each one is durably in place."""

    def __init__(self, checkpoints_dir: Path, model: Any, tokenizer: Tokenizer, *, sync: bool,
                 on_commit: Callable[[SavedCheckpoint], None], max_pending: int = 2,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self.dir = Path(checkpoints_dir)
        self.tokenizer = tokenizer
        self.config_json = model.config.to_json_string()
        self.tokenizer_json = tokenizer.to_json()
        self.sync = sync
        self.on_commit = on_commit
        self.clock = clock
        self.error: Exception | None = None  # the first failure of the background writer
        self.committed: list[SavedCheckpoint] = []
        # A second model instance: the background thread loads each snapshot into it to fingerprint.
        self._shadow = copy.deepcopy(model).eval()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_pending)
        self._thread: threading.Thread | None = None
        if not sync:
            self._thread = threading.Thread(target=self._worker, name="checkpoint-writer", daemon=True)
            self._thread.start()

    def save(self, model: Any, *, step: int, weight_update_ns: int) -> int:
        """Save the model's current weights as step `step`. Returns the ns the caller was blocked."""
        self.check()
        begin = self.clock()
        tensors = snapshot(model)
        job = _Job(step, tensors, weight_update_ns, begin)
        if self.sync:
            self._write(job)
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
            except Exception as e:  # noqa: BLE001 - a dead writer thread would block the loop forever
                self.error = _as_checkpoint_error(e, job.step)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def _write(self, job: _Job) -> None:
        step, tensors, weight_update_ns, begin = job.step, job.tensors, job.weight_update_ns, job.begin_ns
        try:
            sha, size = write_checkpoint(self.dir / step_dirname(step), tensors, config_json=self.config_json,
                                         tokenizer_json=self.tokenizer_json, weight_update_ns=weight_update_ns,
                                         step=step)
            self._shadow.load_state_dict(tensors, strict=True)
            fp = fingerprint_record(self._shadow, self.tokenizer)
        except Exception as e:  # noqa: BLE001 - any failure (disk, fingerprint, device) is this step's
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
        saved = SavedCheckpoint(step=step, path=self.dir / step_dirname(step), sha256=sha, bytes=size,
                                weight_update_ns=weight_update_ns, save_begin_ns=begin, save_end_ns=end,
                                blocked_ns=end - begin if self.sync else job.blocked_ns,
                                fingerprint=fp, dtype=dtype)
        self.committed.append(saved)
        self.on_commit(saved)


def _as_checkpoint_error(e: Exception, step: int) -> Exception:
    """What the training loop raises for a failed save: our errors as they are, anything else wrapped."""
    if isinstance(e, RecorderError):
        return e
    wrapped = CheckpointError(f"step {step}: saving the checkpoint failed: {type(e).__name__}: {e}")
    wrapped.__cause__ = e
    return wrapped


def checkpoint_event_data(saved: SavedCheckpoint, run_path: Path) -> dict[str, Any]:
    """The data object of a checkpoint_committed event."""
    return {"path": str(saved.path.relative_to(run_path)), "sha256": saved.sha256, "bytes": saved.bytes,
            "weight_update_ns": saved.weight_update_ns, "save_begin_ns": saved.save_begin_ns,
            "save_end_ns": saved.save_end_ns, "blocked_ns": saved.blocked_ns, "fingerprint": saved.fingerprint,
            "format": "safetensors", "dtype": saved.dtype}


