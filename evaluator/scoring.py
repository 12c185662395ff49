"""The worker's side: load one checkpoint (weights only), fingerprint it, sample and reward completions.

A `Scorer` runs in the driver's process (one worker) or inside a Ray actor (many); it never writes events:
it returns fingerprints and samples, and the driver records them. torch is imported only here, lazily.
The task (prompts, template, verifier) comes from a task spec file; no task has a code path of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.command import CommandRun, execute
from evaluator.passk import sample_seed
from evaluator.results_files import Sample
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
    expected: dict[str, Any] | None = None  # the committed manifest each shard is checked against as it is read
    model_code: str | None = None  # --model-code ROOT and --model-factory package.module:function
    model_factory: str | None = None
    model_config: str | None = None  # --model-config DIR, --tokenizer DIR: a Megatron series holds neither
    tokenizer: str | None = None
    # the dtype the recorded fingerprint was computed in: the weights are loaded in it, fingerprinted, then
    # cast to `dtype` (a cast gives the bits a direct load in `dtype` gives); None: `dtype`
    fingerprint_dtype: Dtype | None = None


def chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def load_model(checkpoint_dir: Path, loading: Loading, *, keep_state: bool = False) -> Any:
    """The checkpoint loaded in `loading.dtype` on `loading.device` (recorder.checkpoints: any format it
    detects, every shard checked against `loading.expected` while it is read); `keep_state`: with the tensors
    it was loaded from."""
    from recorder.checkpoints.detect import ModelSource
    from recorder.checkpoints.evaluable import load_checkpoint
    from recorder.checkpoints.manifest import Manifest

    return load_checkpoint(
        checkpoint_dir,
        dtype=loading.dtype,
        device=loading.device,
        expected=Manifest.from_dict(loading.expected) if loading.expected is not None else None,
        model_code=Path(loading.model_code) if loading.model_code else None,
        model_factory=loading.model_factory,
        trust_remote_code=loading.trust_remote_code,
        source=ModelSource.of(loading.model_config, loading.tokenizer),
        keep_state=keep_state,
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
        self.placed: dict[str, Any] = {}  # what was loaded: dtype, device, format, code provenance
        self.team_code = False  # the loaded model is built by the team's --model-code

    def ready(self) -> bool:
        """True once constructed (Ray actors start asynchronously; the driver waits on this)."""
        return True

    def load(self, checkpoint_dir: str, texts: list[str] | None, loading: Loading) -> float | None:
        """Load the checkpoint's weights (safetensors, no unpickling) and the task; the fingerprint over
        `texts` when given."""
        from trainer.policy.taskspec import load_spec

        if self.spec is None or str(self.spec.path) != loading.task:
            self.spec = load_spec(loading.task)
        first = loading.fingerprint_dtype if texts is not None and loading.fingerprint_dtype else loading.dtype
        self.team_code = loading.model_code is not None
        with self._watched():
            loaded = load_model(Path(checkpoint_dir), replace(loading, dtype=first))
            self.model, self.tokenizer, self.loaded = loaded.model, loaded.tokenizer, checkpoint_dir
            measured = None
            if texts is not None:
                from recorder.checkpoints.fingerprint import fingerprint

                measured = float(fingerprint(self.model, self.tokenizer, texts))
        if first != loading.dtype:
            from recorder.checkpoints.load import torch_dtype

            self.model = self.model.to(torch_dtype(loading.dtype))
        self.placed = placement(loaded) | {"dtype": loading.dtype}
        return measured

    @contextmanager
    def _watched(self) -> Iterator[None]:
        """With the team's model code: every module executed meanwhile is checked (exec_audit.py); a module
        from outside its tree and the installed libraries ends the evaluation with ModelCodeError."""
        if not self.team_code:
            yield
            return
        from recorder.checkpoints.team_code import exec_audit

        with exec_audit.watching():
            yield
        exec_audit.check()

    def placement(self) -> dict[str, Any]:
        """How the loaded checkpoint is held: dtype, device, format, manifest root, model code provenance."""
        return dict(self.placed)

    def command(self, argv: list[str]) -> CommandRun:
        """The submitter's evaluation command, run in this worker (with its accelerator)."""
        return execute(argv)

    def harness(self, name: str, requests: list[Any], batch_size: int) -> list[Any]:
        """lm-eval requests on the loaded checkpoint (evaluator/harness/loglik.py METHODS), in order."""
        from evaluator.harness.loglik import METHODS

        if self.model is None:
            raise RuntimeError("harness() before load(): the driver must load a checkpoint first")
        with self._watched():
            return list(METHODS[name](self.model, self.tokenizer, requests, batch_size=batch_size))

    def score(self, plan: list[tuple[int, int]], gen: Generation) -> list[Sample]:
        """One sample per (task index, sample index) of `plan`, in plan order; batches of gen.batch_size."""
        from trainer.policy.sampling import generate

        if self.model is None or self.spec is None:
            raise RuntimeError("score() before load(): the driver must load a checkpoint first")
        with self._watched():
            return self._sampled(self.spec, plan, gen, generate)

    def _sampled(self, spec: TaskSpec, plan: list[tuple[int, int]], gen: Generation, generate: Any) -> list[Sample]:
        items = spec.items
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


SHORT_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def placement(loaded: Any) -> dict[str, Any]:
    """results.json's account of a loaded checkpoint (recorder.checkpoints.evaluable.Loaded)."""
    out: dict[str, Any] = {
        "dtype": SHORT_DTYPES.get(loaded.dtype, loaded.dtype),
        "device": loaded.device,
        "format": loaded.info.format,
        "manifest_root": loaded.manifest.root,
    }
    if loaded.provenance is not None:
        out["model_code"] = loaded.provenance.to_dict()
    return out
