"""Is this the checkpoint training committed? Its weights file's hash, and its fingerprint.

The hash proves the bytes are the ones committed (a NeMo-RL checkpoint's weights are a directory: the hash
of its manifest, as `import-checkpoints` recorded it). It cannot see a changed tokenizer.json or config.json
next to them, or evaluator code that reads the weights differently: the fingerprint (mean log-likelihood
of a fixed holdout batch, recomputed from what was loaded) does, within a tolerance.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.committed import CommittedCheckpoint
from evaluator.errors import FingerprintMismatchError, HashMismatchError, MissingCheckpointError
from recorder.checkpoints.formats import recorded_format
from trainer.policy.errors import CheckpointError

if TYPE_CHECKING:
    from recorder.checkpoints.manifest import Manifest
    from trainer.policy.taskspec import TaskSpec

WEIGHTS_FILE = "model.safetensors"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def weights_path(directory: Path, cp: CommittedCheckpoint) -> Path:
    """The weights file of a checkpoint directory; MissingCheckpointError if it is not there."""
    if not directory.is_dir():
        raise MissingCheckpointError(
            f"{cp.where}: checkpoint directory {directory} is missing: it was moved or "
            "deleted after training committed it"
        )
    if recorded_format(cp.format).weights_dir:
        weights = directory / recorded_format(cp.format).weights_dir
        if not weights.is_dir():
            raise MissingCheckpointError(f"{cp.where}: {weights} is missing: the checkpoint is incomplete")
        return weights
    weights = directory / WEIGHTS_FILE
    if not weights.is_file():
        raise MissingCheckpointError(f"{cp.where}: {weights} is missing: the checkpoint is incomplete")
    return weights


def _digest(weights: Path) -> tuple[str, int]:
    if weights.is_dir():
        from recorder.store.run_files import tree_digest

        return tree_digest(weights)
    return sha256_file(weights), weights.stat().st_size


def check_hash(cp: CommittedCheckpoint, weights: Path) -> str:
    """The file's sha256, if it is the one recorded; HashMismatchError otherwise."""
    if weights.is_file() and cp.bytes is not None and weights.stat().st_size != cp.bytes:
        raise HashMismatchError(
            f"{cp.where}: {weights} has {weights.stat().st_size} bytes, training committed {cp.bytes}: the "
            "weights file was altered after training; it is not scored"
        )
    digest, size = _digest(weights)
    if cp.bytes is not None and size != cp.bytes:
        raise HashMismatchError(
            f"{cp.where}: {weights} holds {size} bytes, training committed {cp.bytes}: the "
            "weights were altered after training; they are not scored"
        )
    if digest != cp.sha256:
        raise HashMismatchError(
            f"{cp.where}: sha256 of {weights} is {digest[:16]}..., training committed "
            f"{cp.sha256[:16] or '(none)'}...: the weights file was altered after training; "
            "it is not scored"
        )
    return digest


def recorded_fingerprint(cp: CommittedCheckpoint) -> tuple[str, float]:
    """(method, value) training recorded; FingerprintMismatchError if there is none to compare with."""
    value = cp.fingerprint.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FingerprintMismatchError(
            f"{cp.where}: training recorded no usable fingerprint ({cp.fingerprint!r}): "
            "nothing to compare with; pass --fingerprint off to evaluate without it"
        )
    return str(cp.fingerprint.get("method", "")), float(value)


def fingerprint_texts(cp: CommittedCheckpoint, spec: TaskSpec) -> list[str]:
    """The texts the recorded fingerprint was computed over: the built-in holdout (the trainer's method), or
    the fixed texts or `spec`'s dev split, recognised by their hash; FingerprintMismatchError otherwise."""
    from recorder.checkpoints.fingerprint import FIXED_TEXTS, METHOD, TEXTS_METHOD, texts_sha256
    from trainer.policy.task import holdout_texts

    method = cp.fingerprint.get("method")
    if method == METHOD:
        return holdout_texts()
    if method != TEXTS_METHOD:
        raise FingerprintMismatchError(
            f"{cp.where}: fingerprinted with {method!r}, this evaluator computes {METHOD!r} or "
            f"{TEXTS_METHOD!r}: the code differs; it is not scored"
        )
    known = [FIXED_TEXTS, *([spec.fingerprint_texts() or []] if spec.dev else [])]
    found = next((t for t in known if texts_sha256(t) == cp.fingerprint.get("texts_sha256")), None)
    if found is None:
        raise FingerprintMismatchError(
            f"{cp.where}: fingerprinted over texts {cp.fingerprint.get('texts')!r}, which are neither the fixed "
            f"texts nor the dev split of {spec.path.name}: pass --task with the spec it was recorded with"
        )
    return found


def check_fingerprint(cp: CommittedCheckpoint, measured: list[float | None], tolerance: float) -> float:
    """The largest |measured - recorded| over workers, if within `tolerance`; FingerprintMismatchError if not."""
    method, recorded = recorded_fingerprint(cp)
    worst = 0.0
    for i, value in enumerate(measured):
        if value is None or not math.isfinite(value):
            raise FingerprintMismatchError(f"{cp.where}: worker {i} computed no fingerprint ({value!r})")
        worst = max(worst, abs(value - recorded))
        if not abs(value - recorded) <= tolerance:
            raise FingerprintMismatchError(
                f"{cp.where}: fingerprint ({method or 'unnamed method'}) is {value:.6f} here, training recorded "
                f"{recorded:.6f} (difference {abs(value - recorded):.6f} > tolerance {tolerance}): the weights, "
                "tokenizer or code differ from training's; it is not scored"
            )
    return worst


def committed_manifest(cp: CommittedCheckpoint, directory: Path) -> Manifest | None:
    """The shard digests `cp` was committed with: its manifest, or (the policy's single weights file) that
    file's; None for a commit that recorded only a tree digest (checked by `check_hash`, a read before
    loading). HashMismatchError when the manifest's root is not the commit's sha256."""
    from recorder.checkpoints.manifest import Manifest, ShardDigest

    if cp.manifest is None:
        weights_path(directory, cp)  # MissingCheckpointError naming what is gone
    else:
        _present(directory, cp)
    if cp.manifest is not None:
        try:
            manifest = Manifest.from_dict(cp.manifest)
        except CheckpointError as e:
            raise HashMismatchError(f"{cp.where}: {e}") from e
        if manifest.root != cp.sha256:
            raise HashMismatchError(
                f"{cp.where}: the commit's manifest root {manifest.root[:16]}... is not its sha256 "
                f"{cp.sha256[:16]}...: the commit is inconsistent; it is not scored"
            )
        return manifest
    if recorded_format(cp.format).single_file and cp.bytes is not None:
        return Manifest((ShardDigest(WEIGHTS_FILE, cp.bytes, cp.sha256),))
    return None


def _present(directory: Path, cp: CommittedCheckpoint) -> None:
    if not directory.is_dir():
        raise MissingCheckpointError(
            f"{cp.where}: checkpoint directory {directory} is missing: it was moved or "
            "deleted after training committed it"
        )


def hash_shards(cp: CommittedCheckpoint, directory: Path, expected: Manifest) -> str:
    """The root of `directory`'s shards, every one checked against `expected` (nothing loaded);
    HashMismatchError naming the shard that differs."""
    from recorder.checkpoints.readers import detect
    from recorder.checkpoints.readers import hash_shards as hash_files
    from trainer.policy.errors import ShardMismatchError

    try:
        return hash_files(detect(directory), expected).root
    except ShardMismatchError as e:
        raise HashMismatchError(f"{cp.where}: {e}") from e
