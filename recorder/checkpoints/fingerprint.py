"""An integrity fingerprint a checkpoint's evaluator can recompute from the weights alone.

The value is the mean per-token log-likelihood of the fixed holdout texts (task.holdout_texts). Each text is
scored on its own (no padding, so the number does not depend on batching) and summed in float64. Two loads
of the same weights give the same value up to float32 reduction order (thread count): compare with a
tolerance such as abs(a - b) <= 1e-5 * max(1, abs(a)); a different model, tokenizer or code moves it far more.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from trainer.policy.task import holdout_texts
from trainer.policy.tokenizer import Tokenizer

METHOD = "holdout_mean_loglik"  # the built-in task's holdout texts (what the trainer records)
# Any model: the mean log-likelihood of named texts, a task spec's dev split or FIXED_TEXTS; the record names
# them by `texts` ("dev:<spec name>" or "fixed") and their `texts_sha256`.
TEXTS_METHOD = "mean_loglik"
FIXED_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A checkpoint is evaluated only when its weights are the ones that training committed.",
    "Seven plus five is twelve, and twelve times three is thirty-six.",
    "def add(a, b):\n    return a + b\n",
]


def fingerprint(model: Any, tokenizer: Tokenizer, texts: list[str] | None = None) -> float:
    """Mean log-likelihood per token of `texts` (default: the holdout), <eos> included."""
    import torch

    texts = holdout_texts() if texts is None else texts
    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for text in texts:
                ids = torch.tensor([[tokenizer.bos_id, *tokenizer.encode(text), tokenizer.eos_id]])
                logits = model(input_ids=ids).logits[0, :-1].double()
                logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[0, 1:, None])
                total += float(logp.sum())
                count += int(ids.shape[1] - 1)
    finally:
        model.train(was_training)
    return total / count


def fingerprint_record(model: Any, tokenizer: Tokenizer) -> dict[str, Any]:
    """The `fingerprint` object of a checkpoint_committed event."""
    return {"method": METHOD, "value": fingerprint(model, tokenizer)}


def texts_sha256(texts: list[str]) -> str:
    """Hash of the ordered texts a fingerprint was computed over."""
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode()).hexdigest()


def texts_record(model: Any, tokenizer: Tokenizer, texts: list[str], name: str) -> dict[str, Any]:
    """The `fingerprint` object for a model fingerprinted over `texts` called `name` ("fixed", "dev:<spec>")."""
    return {
        "method": TEXTS_METHOD,
        "texts": name,
        "texts_sha256": texts_sha256(texts),
        "value": fingerprint(model, tokenizer, texts),
    }


def matches(recorded: float, recomputed: float, rel_tol: float = 1e-5) -> bool:
    """Whether a recomputed fingerprint matches the recorded one (see the module docstring)."""
    return abs(recorded - recomputed) <= rel_tol * max(1.0, abs(recorded))
