"""The fingerprint record of a checkpoint directory, which an importer records and the evaluator recomputes
before scoring: the mean log-likelihood of a task spec's dev split, else of the fixed texts
(fingerprint.FIXED_TEXTS), in float32. The checkpoint is loaded through recorder.checkpoints (Hugging Face
safetensors, or the torch DCP shards of Megatron-Core torch_dist or an FSDP2 job, whose files are hashed while
read into a manifest). Importers take it
as a function, so that they need neither torch nor the policy."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recorder.checkpoints.detect import ModelSource
from recorder.checkpoints.evaluable import load_checkpoint
from recorder.checkpoints.fingerprint import FIXED_TEXTS, texts_record
from recorder.checkpoints.readers import left_out, reader
from recorder.store.run_files import sha256_file
from trainer.policy.taskspec import load_spec

# (the fingerprint record, the manifest of Megatron-Core weights, hashed while loaded, or None)
Fingerprinter = Callable[[Path], tuple[dict[str, Any], dict[str, Any] | None]]


def _relative(file: Path, checkpoint: Path) -> str:
    """`file` as a path from the checkpoint directory (`..` where it lies in the run it came from)."""
    return Path(os.path.relpath(file.resolve(), checkpoint.resolve())).as_posix()


def checkpoint_fingerprinter(task: Path | None, source: ModelSource | None = None) -> Fingerprinter:
    """A function giving a checkpoint directory's fingerprint record and DCP shards' manifest, over `task`'s
    dev split (a spec file) when it has one, else the fixed texts. The spec is read now, so a bad one is
    refused before any checkpoint is loaded; each call loads its checkpoint in float32 (CheckpointError when
    the weights cannot be loaded)."""
    spec = load_spec(task) if task is not None else None
    dev = spec.fingerprint_texts() if spec is not None else None

    def record(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
        loaded = load_checkpoint(path, dtype="fp32", source=source)
        model, tokenizer = loaded.model, loaded.tokenizer
        if dev is not None and spec is not None:
            fingerprint = texts_record(model, tokenizer, dev, f"dev:{spec.name}")
        else:
            fingerprint = texts_record(model, tokenizer, FIXED_TEXTS, "fixed")
        manifest = loaded.manifest.to_dict() if reader(loaded.info.format).sharded else None
        if manifest is not None:  # what loading read besides the shards: the importer hashes it into the commit
            manifest["files"] = {_relative(f, path): sha256_file(f) for f in loaded.info.companion_files()}
            # shards no `.metadata` names: not read, not in the manifest; the importer names them
            manifest["left_out"] = [_relative(f, path) for f in left_out(loaded.info)]
        return fingerprint | {"dtype": "fp32"}, manifest

    return record
