"""What one evaluation session does: the run's eval settings (from `run_opened`) plus the command's options.

The sampling settings (k, temperature, top_p, max_new_tokens) and the target come from the resolved config
training recorded, never from evaluator defaults: evaluating with other settings would score a different
benchmark. Options only choose how (order, workers, batch size), which cannot change a score. The task spec
is the one the run trained on (evaluator/run_facts.py check_recorded_task); only an imported run, which recorded
no settings of ours, takes them from `--task`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evaluator.errors import SettingsError
from evaluator.order import Order
from recorder.rules import recorded_target

if TYPE_CHECKING:
    from recorder.store.kinds import RunOpened
    from trainer.policy.taskspec import TaskSpec

Backend = Literal["torch", "vllm", "command"]
Dtype = Literal["fp32", "bf16", "fp16"]

DEFAULT_TOLERANCE = 0.005
DEFAULT_BATCH_SIZE = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEvalConfig:
    """The evaluation settings the run recorded (run_opened.data.config)."""

    k: int
    temperature: float
    top_p: float
    target: float  # the run's recorded pass target (recorder.rules.recorded_target)
    max_new_tokens: int
    samples: int  # the first `samples` validation tasks are scored (mllog eval_samples)

    @property
    def metric(self) -> str:
        return f"pass@{self.k}"

    @classmethod
    def from_spec(cls, spec: TaskSpec) -> RunEvalConfig:
        """A task spec's settings: `recorder eval --task FILE` uses them instead of what the run recorded."""
        return cls(
            k=spec.k,
            temperature=spec.temperature,
            top_p=spec.top_p,
            target=spec.target,
            max_new_tokens=spec.max_new_tokens,
            samples=spec.samples,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    """The command's options. Validated when built; every problem is reported at once."""

    order: Order = Order("ascending")
    all: bool = False
    workers: int = 1
    ray_address: str | None = None
    limit: int | None = None  # checkpoints to evaluate in this session at most
    tasks: int | None = None  # API only: first N tasks instead of the run's eval.samples (tests; not a score)
    batch_size: int = DEFAULT_BATCH_SIZE
    allow_gaps: bool = False
    fingerprint: bool = True
    fingerprint_tolerance: float = DEFAULT_TOLERANCE
    task: Path | None = None  # an import's task spec and settings; a trained run's own spec, wherever it lies now
    backend: Backend = "torch"
    command: str | None = None  # backend "command": the submitter's evaluation, with {checkpoint} and {out}
    dtype: Dtype | None = None  # None: the dtype the checkpoint's run rolled out in (the rule's precision)
    device: str = "cpu"
    trust_remote_code: bool = False
    model_code: Path | None = None  # the team's model code and its factory (recorder.checkpoints.team_code.model_code)
    model_factory: str | None = None
    model_config: Path | None = None  # a Megatron series' Hugging Face config and tokenizer (it holds neither)
    tokenizer: Path | None = None
    tensor_parallel_size: int = 1  # --backend vllm: how the engine spreads a large model
    pipeline_parallel_size: int = 1
    enable_expert_parallel: bool = False
    quantization: str | None = None
    force: bool = False  # evaluate a run that fails verify; its results are marked UNVERIFIED

    def __post_init__(self) -> None:
        errors = []
        if self.backend == "command" and not self.command:
            errors.append('--backend command needs --command "... {checkpoint} ... {out}"')
        if self.command and self.backend != "command":
            errors.append("--command runs only with --backend command")
        if self.command and ("{checkpoint}" not in self.command or "{out}" not in self.command):
            errors.append(f"--command {self.command!r}: must contain {{checkpoint}} and {{out}}")
        if self.backend == "vllm" and self.workers != 1:
            errors.append("--backend vllm batches requests itself: --workers 1")
        if (self.model_code is None) != (self.model_factory is None):
            errors.append("--model-code ROOT and --model-factory package.module:function go together")
        if self.backend != "vllm" and (
            self.tensor_parallel_size != 1 or self.pipeline_parallel_size != 1 or self.enable_expert_parallel
        ):
            errors.append(
                "--tensor-parallel-size, --pipeline-parallel-size and --enable-expert-parallel: --backend vllm"
            )
        if self.tensor_parallel_size < 1 or self.pipeline_parallel_size < 1:
            errors.append("--tensor-parallel-size and --pipeline-parallel-size: at least 1")
        if self.workers < 1:
            errors.append(f"--workers {self.workers}: at least 1")
        if self.limit is not None and self.limit < 1:
            errors.append(f"--limit {self.limit}: at least 1 checkpoint (or leave it out)")
        if self.tasks is not None and self.tasks < 1:
            errors.append(f"--tasks {self.tasks}: at least 1 (or leave it out for the whole validation set)")
        if self.batch_size < 1:
            errors.append(f"--batch-size {self.batch_size}: at least 1")
        if not self.fingerprint_tolerance >= 0:
            errors.append(f"--fingerprint-tolerance {self.fingerprint_tolerance}: a non-negative number")
        if errors:
            raise SettingsError("invalid options: " + "; ".join(errors))


_EVAL_KEYS = {"k": int, "temperature": float, "top_p": float, "target": float, "max_new_tokens": int, "samples": int}


def run_eval_config(opened: RunOpened) -> RunEvalConfig:
    """The eval settings a run recorded in run_opened: `config["eval"]` with k, temperature, top_p, target,
    max_new_tokens, samples (trainer/config.py EvalSettings); the target is the run's recorded one
    (recorder.rules.recorded_target), the same that the history and replay judge by."""
    config = opened.config
    section = config.get("eval")
    if not isinstance(section, dict):
        raise SettingsError(
            "run_opened.data.config has no 'eval' section (k, temperature, top_p, target, "
            "max_new_tokens): this run was not recorded by `recorder train`, so its evaluation "
            "settings are unknown; give them with --task FILE (a task spec)"
        )
    errors, values = [], {}
    for key, typ in _EVAL_KEYS.items():
        v = section.get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (typ is int and not isinstance(v, int)):
            errors.append(f"eval.{key} = {v!r}: expected {typ.__name__}")
            continue
        values[key] = typ(v)
    if errors:
        raise SettingsError("run_opened.data.config: " + "; ".join(errors))
    target = recorded_target(opened)
    if target is not None:
        values["target"] = target
    cfg = RunEvalConfig(**values)
    if cfg.k < 1 or cfg.max_new_tokens < 1 or cfg.samples < 1 or not 0 < cfg.top_p <= 1 or cfg.temperature < 0:
        raise SettingsError(f"run_opened.data.config.eval is out of range: {cfg}")
    return cfg


RULE_DTYPES = {"bf16"}  # the rule: BF16, or the exact format the rollouts were generated in
_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "fp32": "fp32", "bf16": "bf16", "fp16": "fp16"}


def short_dtype(name: str | None) -> str | None:
    """A recorded dtype ("bfloat16", "bf16", "float32") as the evaluator names it, None if unknown."""
    return _NAMES.get(name or "")


def eval_dtype(asked: Dtype | None, rollout: str | None) -> Dtype:
    """The dtype a checkpoint is evaluated in: the one asked for, else its run's rollout dtype, else bf16."""
    if asked is not None:
        return asked
    found = short_dtype(rollout)
    return found if found in ("fp32", "bf16", "fp16") else "bf16"  # type: ignore[return-value]


def rule_precision(dtype: str, rollout: str | None) -> bool:
    """Whether evaluating in `dtype` is the rule's precision: bf16, or the run's rollout dtype."""
    return dtype in RULE_DTYPES or dtype == short_dtype(rollout)
