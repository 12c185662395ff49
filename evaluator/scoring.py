"""The worker's side: load one checkpoint (weights only), fingerprint it, sample and reward completions.

A `Scorer` runs in the driver's process (one worker) or inside a Ray actor (many); it never writes events:
it returns fingerprints and samples, and the driver records them. torch is imported only here, lazily.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.passk import sample_seed
from evaluator.results import Sample


@dataclass(frozen=True, slots=True, kw_only=True)
class Generation:
    """How completions are sampled (from the run's config): the same for every worker."""

    temperature: float
    top_p: float
    max_new_tokens: int
    batch_size: int


def chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class Scorer:
    """Holds the model of the checkpoint being evaluated. One per worker."""

    def __init__(self, threads: int | None = None) -> None:
        # Imported when the worker starts, so that start-up is not billed to the first checkpoint.
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, LlamaForCausalLM  # noqa: F401  (both models are Llama)

        from trainer.policy.task import validation_tasks

        if threads:
            torch.set_num_threads(threads)
        self.tasks = validation_tasks()
        self.model: Any = None
        self.tokenizer: Any = None
        self.loaded: str | None = None

    def ready(self) -> bool:
        """True once constructed (Ray actors start asynchronously; the driver waits on this)."""
        return True

    def load(self, checkpoint_dir: str, with_fingerprint: bool) -> float | None:
        """Load the checkpoint's weights (safetensors, no unpickling); its fingerprint if asked."""
        from trainer.policy.checkpoint_files import load_checkpoint

        self.model, self.tokenizer = load_checkpoint(Path(checkpoint_dir))
        self.model.eval()
        self.loaded = checkpoint_dir
        if not with_fingerprint:
            return None
        from trainer.policy.fingerprint import fingerprint

        return float(fingerprint(self.model, self.tokenizer))

    def harness(self, name: str, requests: list[Any], batch_size: int) -> list[Any]:
        """lm-eval requests on the loaded checkpoint (evaluator/harness/loglik.py METHODS), in order."""
        from evaluator.harness.loglik import METHODS

        if self.model is None:
            raise RuntimeError("harness() before load(): the driver must load a checkpoint first")
        return list(METHODS[name](self.model, self.tokenizer, requests, batch_size=batch_size))

    def score(self, plan: list[tuple[int, int]], gen: Generation) -> list[Sample]:
        """One sample per (task index, sample index) of `plan`, in plan order; batches of gen.batch_size."""
        from trainer.policy.sampling import generate
        from trainer.policy.task import reward

        if self.model is None:
            raise RuntimeError("score() before load(): the driver must load a checkpoint first")
        out: list[Sample] = []
        for batch in chunks(plan, gen.batch_size):
            seeds = [sample_seed(t, j) for t, j in batch]
            completions = generate(
                self.model,
                self.tokenizer,
                [self.tasks[t].prompt for t, _ in batch],
                temperature=gen.temperature,
                top_p=gen.top_p,
                max_new_tokens=gen.max_new_tokens,
                seeds=seeds,
            )
            out.extend(
                Sample(task=t, sample=j, seed=s, completion=c, reward=float(reward(self.tasks[t], c)))
                for (t, j), s, c in zip(batch, seeds, completions, strict=False)
            )
        return out
