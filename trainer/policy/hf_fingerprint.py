"""The fingerprint record of a Hugging Face checkpoint directory, which an importer records and the evaluator
recomputes before scoring: the mean log-likelihood of a task spec's dev split, else of the fixed texts
(fingerprint.FIXED_TEXTS). Importers take it as a function, so that they need neither torch nor the policy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainer.policy.fingerprint import FIXED_TEXTS, texts_record
from trainer.policy.hf_checkpoint import load_hf_checkpoint
from trainer.policy.taskspec import load_spec

Fingerprinter = Callable[[Path], dict[str, Any]]


def hf_fingerprinter(task: Path | None) -> Fingerprinter:
    """A function giving a checkpoint directory's fingerprint record, over `task`'s dev split (a spec file)
    when it has one, else the fixed texts. The spec is read now, so a bad one is refused before any checkpoint
    is loaded; each call loads its checkpoint (CheckpointError when the weights cannot be loaded)."""
    spec = load_spec(task) if task is not None else None
    dev = spec.fingerprint_texts() if spec is not None else None

    def record(path: Path) -> dict[str, Any]:
        model, tokenizer = load_hf_checkpoint(path)
        if dev is not None and spec is not None:
            return texts_record(model, tokenizer, dev, f"dev:{spec.name}")
        return texts_record(model, tokenizer, FIXED_TEXTS, "fixed")

    return record
