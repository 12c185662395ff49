"""The worker's side: load one checkpoint (weights only), fingerprint it, sample and reward completions.

A `Scorer` runs in the driver's process (one worker) or inside a Ray actor (many); it never writes events:
it returns fingerprints and samples, and the driver records them. torch is imported only here, lazily.
The task (prompts, template, verifier) comes from a task spec file; no task has a code path of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.command import CommandRun, execute
from evaluator.passk import sample_seed
from evaluator.results import Sample
from evaluator.settings import Dtype

if TYPE_CHECKING:
    from trainer.policy.taskspec import TaskSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Generation:
    """How completions are sampled (from the run's config or the task spec): the same for every worker."""

    temperature: float
    top_p: float
    max_new_tokens: int
    batch_size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Loading:
    """How a worker loads a checkpoint and which task it scores: the same for every worker."""

    task: str  # the task spec file
    dtype: Dtype = "fp32"
    device: str = "cpu"
    trust_remote_code: bool = False


def chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def load_model(checkpoint_dir: Path, loading: Loading) -> tuple[Any, Any]:
    """(model, tokenizer): the policy's own checkpoint format (float32, as trained), else any Hugging Face
    causal LM directory (safetensors only)."""
    from trainer.policy.checkpoint_files import WEIGHTS, load_checkpoint, read_metadata
    from trainer.policy.hf_checkpoint import load_hf_checkpoint

    if (checkpoint_dir / WEIGHTS).is_file() and "weight_update_ns" in read_metadata(checkpoint_dir):
        return load_checkpoint(checkpoint_dir)
    return load_hf_checkpoint(
        checkpoint_dir, dtype=loading.dtype, device=loading.device, trust_remote_code=loading.trust_remote_code
    )


class Scorer:
    """Holds the model of the checkpoint being evaluated and the task spec it is scored on. One per worker."""

    def __init__(self, threads: int | None = None) -> None:
        # Imported when the worker starts, so that start-up is not billed to the first checkpoint.
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, LlamaForCausalLM  # noqa: F401  (both models are Llama)

        if threads:
            torch.set_num_threads(threads)
        self.spec: TaskSpec | None = None
        self.model: Any = None
        self.tokenizer: Any = None
        self.loaded: str | None = None

    def ready(self) -> bool:
        """True once constructed (Ray actors start asynchronously; the driver waits on this)."""
        return True

    def load(self, checkpoint_dir: str, texts: list[str] | None, loading: Loading) -> float | None:
        """Load the checkpoint's weights (safetensors, no unpickling) and the task; the fingerprint over
        `texts` when given."""
        from trainer.policy.taskspec import load_spec

        if self.spec is None or str(self.spec.path) != loading.task:
            self.spec = load_spec(loading.task)
        self.model, self.tokenizer = load_model(Path(checkpoint_dir), loading)
        self.loaded = checkpoint_dir
        if texts is None:
            return None
        from trainer.policy.fingerprint import fingerprint

        return float(fingerprint(self.model, self.tokenizer, texts))

    def command(self, argv: list[str]) -> CommandRun:
        """The submitter's evaluation command, run in this worker (with its accelerator)."""
        return execute(argv)

    def harness(self, name: str, requests: list[Any], batch_size: int) -> list[Any]:
        """lm-eval requests on the loaded checkpoint (evaluator/harness/loglik.py METHODS), in order."""
        from evaluator.harness.loglik import METHODS

        if self.model is None:
            raise RuntimeError("harness() before load(): the driver must load a checkpoint first")
        return list(METHODS[name](self.model, self.tokenizer, requests, batch_size=batch_size))

    def score(self, plan: list[tuple[int, int]], gen: Generation) -> list[Sample]:
        """One sample per (task index, sample index) of `plan`, in plan order; batches of gen.batch_size."""
        from trainer.policy.sampling import generate

        if self.model is None or self.spec is None:
            raise RuntimeError("score() before load(): the driver must load a checkpoint first")
        spec, items = self.spec, self.spec.items
        out: list[Sample] = []
        for batch in chunks(plan, gen.batch_size):
            seeds = [sample_seed(t, j) for t, j in batch]
            completions = generate(
                self.model,
                self.tokenizer,
                [spec.render(items[t], self.tokenizer) for t, _ in batch],
                temperature=gen.temperature,
                top_p=gen.top_p,
                max_new_tokens=gen.max_new_tokens,
                seeds=seeds,
            )
            out.extend(
                Sample(task=t, sample=j, seed=s, completion=c, reward=spec.reward(items[t], c))
                for (t, j), s, c in zip(batch, seeds, completions, strict=False)
            )
        return out
