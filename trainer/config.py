"""The trainer's one config: a frozen dataclass tree, validated when built, every problem reported at once.

Sources, later wins: the defaults below, `--config FILE` (TOML or JSON), then `--set key=value` (dotted keys:
`checkpoint.sync=true`, `model=smollm2-135m`, `eval.k=4`). `load_config` resolves derived values (max_steps)
so the config recorded in `run_opened.data.config` is complete; the evaluator reads its `eval` section.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from recorder.rules import EVAL_K, EVAL_SAMPLES, EVAL_TEMPERATURE, EVAL_TOP_P, TARGET, validation_start_step
from recorder.user_paths import user_path
from trainer.errors import ConfigError
from trainer.policy.taskspec import BUILTIN_TASK

BUILTIN_MODELS = ("tiny", "smollm2-135m")

# Every whole number a setting takes is at most this: JSON (the recorded config) keeps it exactly.
MAX_INT = 2**53 - 1
# The most each numeric setting may be, and why: a value past it is a typo or an overflow, never a run (a
# learning rate of 1e300 trains NaN from the second step; 1e23 steps never end).
UPPER_BOUNDS: dict[str, float] = {
    "num_prompts_per_step": 65536,
    "num_generations_per_prompt": 1024,
    "max_steps": 1_000_000,
    "learning_rate": 1.0,
    "adam_epsilon": 1.0,
    "weight_decay": 10.0,
    "grad_clip_norm": 1e6,
    "clip_epsilon": 10.0,
    "rollout_temperature": 100.0,
    "max_new_tokens": 65536,
    "max_sequence_length": 1 << 20,
    "threads": 1024,
    "ray_workers": 1024,
    "checkpoint.max_pending": 64,
    "eval.k": 1024,
    "eval.temperature": 100.0,
    "eval.max_new_tokens": 65536,
    "warmup.batch_size": 65536,
    "warmup.learning_rate": 1.0,
    "warmup.max_batches": 1_000_000,
    "warmup.check_every": 1_000_000,
    "warmup.check_every_batch_within": 1.0,
}
BOUND_REASONS: dict[str, str] = {
    "num_prompts_per_step": "a step's batch is held in memory",
    "num_generations_per_prompt": "a step's batch is held in memory",
    "max_steps": "a longer run is several runs, resumed",
    "learning_rate": "larger steps diverge",
    "adam_epsilon": "it guards a division; larger hides the gradient",
    "weight_decay": "larger decays the weights to zero in a few steps",
    "grad_clip_norm": "larger clips nothing",
    "clip_epsilon": "a ratio clip",
    "rollout_temperature": "larger samples uniformly",
    "max_new_tokens": "the sequence length the mllog declares",
    "max_sequence_length": "the sequence lengths models take",
    "threads": "threads of one process",
    "ray_workers": "actors of one job",
    "checkpoint.max_pending": "each pending save holds a copy of the weights",
    "eval.k": "samples per task",
    "eval.temperature": "larger samples uniformly",
    "eval.max_new_tokens": "the sequence length the mllog declares",
    "warmup.batch_size": "a batch is held in memory",
    "warmup.learning_rate": "larger steps diverge",
    "warmup.max_batches": "the warm-up is a short supervised start",
    "warmup.check_every": "the warm-up is a short supervised start",
    "warmup.check_every_batch_within": "a distance between accuracies",
}


@dataclass(frozen=True)
class CheckpointSettings:
    sync: bool = False  # true: the loop waits for each save (fsync included)
    max_pending: int = 2  # async: writes in flight before a save blocks the loop
    # safetensors: one consolidated file; dcp: every rank writes its own shard (trainer/saving/sharded_checkpoint.py);
    # auto: dcp under torchrun (--nproc > 1), safetensors in one process
    format: Literal["auto", "safetensors", "dcp"] = "auto"

    def sharded(self, distributed: bool) -> bool:
        """Whether every rank writes its own shard: the setting's row of WRITE_FORMATS, `auto` sharded
        exactly under torchrun."""
        return distributed if self.format == "auto" else WRITE_FORMATS[self.format]


# The trainer's own write formats, by `checkpoint.format`: whether each is sharded (True: torch DCP, every rank
# its shard, recorded as `torch-dcp`; False: rank 0's consolidated safetensors file, recorded as `safetensors`).
WRITE_FORMATS: dict[str, bool] = {"safetensors": False, "dcp": True}


@dataclass(frozen=True)
class EvalSettings:
    """What the offline evaluator uses (it reads these from run_opened.data.config.eval)."""

    k: int = EVAL_K
    temperature: float = EVAL_TEMPERATURE
    top_p: float = EVAL_TOP_P
    target: float = TARGET
    max_new_tokens: int = 5
    samples: int = EVAL_SAMPLES  # validation tasks scored (mllog eval_samples)
    # Resolved by load_config, never typed: the task spec the evaluation scores (a run on a spec: that file,
    # absolute; the built-in task: None, the shipped addition spec) and its sha256 (the file and its data), so
    # that `recorder eval` scores what the run trained on and verify can tell when an evaluation did not.
    task: str | None = field(default=None, metadata={"resolved": True})
    task_sha256: str | None = field(default=None, metadata={"resolved": True})


@dataclass(frozen=True)
class WarmupSettings:
    """The supervised init made before init_start (untimed), cached by its settings and the model's."""

    enabled: bool = True
    batch_size: int = 128
    learning_rate: float = 1e-3
    max_batches: int = 600
    # Dev accuracy measured every this many batches: a check every 10 overshot the stop by up to 0.10 of dev
    # accuracy, and the init with it, past the target on one float order of the two measured.
    check_every: int = 5
    # ... and every batch once the last check came this close to the stop: near it, five batches moved dev
    # accuracy by up to 0.13, and the init with it, past the target on 4 of 15 runs (bench/README.md).
    check_every_batch_within: float = 0.05
    # Stop at the first check reaching it, below the target: GRPO earns the rest. Dev and validation accuracy
    # of one init differ by up to 0.09 (other tasks), so 0.58 keeps every init measured below 0.69.
    stop_dev_accuracy: float = 0.58
    cache_dir: str = "~/.cache/recorder/warmup"
    # Take the init shipped with recorder when it was made for these settings (trainer/warmup.py, SHIPPED):
    # training it is most of a first run's time. false: the user's cache, or a warm-up trained here.
    shipped: bool = True


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of `recorder train`. Build with `load_config`, which validates and resolves."""

    seed: int = 0
    model: str = "tiny"  # tiny | smollm2-135m | a Hugging Face model directory (config.json + weights)
    task: str = "addition"  # the built-in addition task, or a task spec file (trainer/policy/taskspec.py)
    device: str = "auto"  # auto (cuda when present) | cpu | cuda | cuda:N
    dtype: Literal["fp32", "bf16"] = "fp32"  # weights and compute; the optimizer state follows the weights
    rollout: Literal["auto", "torch", "vllm"] = "auto"  # auto: vllm for a pretrained model on a GPU, else torch
    division: Literal["open", "closed"] = "open"
    ruleset: Literal["6.1.0"] = "6.1.0"
    # 64 prompts x 4 completions (the GRPO group): at the same batch, more prompts gave the 18 steps before the
    # first checkpoint less noisy updates; 16 x 16 and 32 x 8 crossed less often (bench/README.md).
    num_prompts_per_step: int = 64
    num_generations_per_prompt: int = 4
    micro_batch_size: int = 64
    # Optimizer steps per rollout batch, each on 1/N of it (verl's mini-batches; its defaults give 4). The rule
    # allows 18 steps before the first checkpoint: 4 updates per step crossed 0.69 for 4 of 5 seeds, 1 for 3.
    updates_per_rollout: int = 4
    max_steps: int = 0  # 0: validation start + 1 (the rule's recommendation), resolved by load_config
    learning_rate: float = 5e-5  # calibrated over 5 seeds: 1e-4 crossed 2/5, 2e-4 and 3e-4 collapsed, 5e-5 4/5
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    weight_decay: float = 0.0
    grad_clip_norm: float = 1.0
    clip_epsilon: float = 0.2  # GRPO policy-ratio clip
    rollout_temperature: float = 1.0
    rollout_top_p: float = 1.0
    max_new_tokens: int = 5
    max_sequence_length: int = 65536  # declared for the mllog (the 6.1.0 checker requires 65536)
    threads: int = 1  # torch intra-op threads: the tiny model is op-overhead bound, and extra
    # threads spinning on shared cores made it 5-20x slower (measured)
    ray_workers: int = 2
    vllm_gpu_memory_utilization: float = 0.2
    submission_org: str = "recorder"
    submission_platform: str = "cpu"
    config_filename: str = "default"
    checkpoint: CheckpointSettings = field(default_factory=CheckpointSettings)
    eval: EvalSettings = field(default_factory=EvalSettings)
    warmup: WarmupSettings = field(default_factory=WarmupSettings)

    @property
    def global_batch_size(self) -> int:
        return self.num_prompts_per_step * self.num_generations_per_prompt

    @property
    def validation_start(self) -> int:
        return validation_start_step(self.global_batch_size)

    @property
    def pretrained(self) -> bool:
        """A model that arrives with weights (not the tiny model built from a seed)."""
        return self.model != "tiny"

    @property
    def gradient_accumulation_steps(self) -> int:
        """Micro-batches per optimizer step (a rollout batch takes `updates_per_rollout` of those)."""
        return -(-self.global_batch_size // self.updates_per_rollout // self.micro_batch_size)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def load_config(path: Path | None = None, sets: list[str] | None = None) -> TrainConfig:
    """Defaults <- FILE <- KEY=VALUE overrides; raises ConfigError listing every problem."""
    errors: list[str] = []
    raw: dict[str, Any] = {}
    if path is not None:
        raw = _read_file(Path(path))
        raw.setdefault("config_filename", Path(path).name)
    for item in sets or []:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            errors.append(f"--set {item!r}: expected KEY=VALUE, e.g. --set checkpoint.sync=true")
            continue
        _put(raw, key.strip().split("."), _parse_value(text.strip()))
    cfg: TrainConfig | None = _build(TrainConfig, raw, "", errors)
    if cfg is not None:  # range checks on every value that parsed, so all problems come out at once
        errors.extend(validate(cfg))
    if errors:
        raise ConfigError(errors)
    assert cfg is not None
    given_eval = raw.get("eval")
    cfg, errors = resolve_task(cfg, given_eval if isinstance(given_eval, dict) else {})
    if errors:
        raise ConfigError(errors)
    if cfg.max_steps == 0:
        cfg = dataclasses.replace(cfg, max_steps=cfg.validation_start + 1)
    return cfg


# The settings a task spec carries; a run on a spec takes each from it unless the config gives it.
_SPEC_SETTINGS = ("k", "temperature", "top_p", "max_new_tokens", "samples", "target")


def resolve_task(cfg: TrainConfig, given_eval: dict[str, Any]) -> tuple[TrainConfig, list[str]]:
    """The task a run trains on is the task its evaluation scores: record the spec (an absolute path, so any
    working directory finds it) and its sha256 in `eval`, and take the spec's settings for each `eval.*` the
    config does not give. `given_eval`: the eval keys the user gave (a recorded config given back as --config
    holds `task` and `task_sha256`: they must be what the spec resolves to)."""
    from trainer.policy.taskspec import TaskSpecError, load_spec, shipped

    builtin = cfg.task == BUILTIN_TASK
    path = shipped(BUILTIN_TASK) if builtin else user_path(cfg.task).resolve()
    try:
        spec = load_spec(path)
    except TaskSpecError as e:
        return cfg, [f"task: {e}"]
    if builtin:
        resolved = dataclasses.replace(cfg.eval, task_sha256=spec.sha256)
    else:
        taken = {name: getattr(spec, name) for name in _SPEC_SETTINGS if name not in given_eval}
        resolved = dataclasses.replace(cfg.eval, task=str(path), task_sha256=spec.sha256, **taken)
    errors = [
        f"eval.{name}: {given_eval[name]!r} is not what task {cfg.task!r} resolves to ({getattr(resolved, name)!r}); "
        f"it is set by `task`: leave eval.{name} out"
        for name in ("task", "task_sha256")
        if name in given_eval and given_eval[name] != getattr(resolved, name)
    ]
    if not builtin and resolved.samples > len(spec.items):
        errors.append(f"eval.samples: {resolved.samples} is more than the {len(spec.items)} tasks of {path.name}")
    task = cfg.task if builtin else str(path)
    return dataclasses.replace(cfg, task=task, eval=resolved), errors


def config_from_dict(raw: dict[str, Any]) -> TrainConfig:
    """A recorded config (run_opened.data.config) back as a TrainConfig, validated like any other."""
    errors: list[str] = []
    cfg: TrainConfig | None = _build(TrainConfig, raw, "", errors)
    if cfg is not None:
        errors.extend(validate(cfg))
    if errors:
        raise ConfigError(errors)
    assert cfg is not None
    return cfg


def _read_file(path: Path) -> dict[str, Any]:
    if path.is_dir():
        found = sorted(p.name for p in path.iterdir() if p.suffix in (".toml", ".json") and p.is_file())[:3]
        hint = f" (found there: {', '.join(found)})" if found else ""
        raise ConfigError([f"--config {path}: a directory; --config takes a TOML or JSON settings file{hint}"])
    if not path.is_file():
        raise ConfigError([f"--config {path}: no such file"])
    fmt = "JSON" if path.suffix == ".json" else "TOML"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError([f"--config {path}: cannot be read as UTF-8 {fmt} text ({e})"]) from e
    try:
        obj = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError([f"--config {path}: not valid {fmt}: {e}"]) from e
    except RecursionError as e:  # hostile nesting: a settings file is a flat table, a few levels deep at most
        raise ConfigError([f"--config {path}: nested too deeply to be a settings file"]) from e
    if not isinstance(obj, dict):
        raise ConfigError([f"--config {path}: the top level must be a table/object of settings"])
    return obj


def _parse_value(text: str) -> Any:
    """A TOML/JSON literal when it is one (true, 3, 1e-4, "x"), else the bare text (smollm2-135m)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    # RecursionError: hostile nesting, '[[[[...'; ValueError: an integer of more digits than Python converts
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        return text


def _put(raw: dict[str, Any], keys: list[str], value: Any) -> None:
    for k in keys[:-1]:
        raw = raw.setdefault(k, {}) if isinstance(raw.get(k, {}), dict) else raw
    raw[keys[-1]] = value


def _build(cls: type, raw: Any, prefix: str, errors: list[str]) -> Any:
    if not isinstance(raw, dict):
        errors.append(f"{prefix.rstrip('.')}: expected a table of settings, got {raw!r}")
        return None
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in names:
            errors.append(f"{prefix}{key}: unknown setting; known: {', '.join(sorted(names))}")
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in raw:
            continue
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):
            sub = _build(hint, raw[f.name], f"{prefix}{f.name}.", errors)  # type: ignore[arg-type]
            if sub is not None:
                kwargs[f.name] = sub
        else:
            ok, value, problem = _coerce(raw[f.name], hint)
            if ok:
                kwargs[f.name] = value
            else:
                errors.append(f"{prefix}{f.name}: {problem}")
    return cls(**kwargs)


def _coerce(value: Any, hint: Any) -> tuple[bool, Any, str]:
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value in choices:
            return True, value, ""
        return False, None, f"{value!r} is not one of {', '.join(map(str, choices))}; pick one of them"
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            ok, v, _ = _coerce(value, arg)
            if ok:
                return True, v, ""
        return False, None, f"{value!r} has the wrong type ({hint})"
    if hint is bool:
        return (True, value, "") if isinstance(value, bool) else (False, None, f"{value!r} is not true or false")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > MAX_INT:
                return False, None, f"{_short(value)} is out of range; give a whole number of at most {MAX_INT}"
            return True, value, ""
        return False, None, f"{_short(value)} is not an integer; give a whole number"
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            # an integer past MAX_INT may have no float at all (10**400)
            number = float(value) if isinstance(value, float) or abs(value) <= MAX_INT else math.inf
            if not math.isfinite(number):
                return False, None, f"{_short(value)} is not a finite number; give e.g. 1e-4"
            return True, number, ""
        return False, None, f"{_short(value)} is not a number; give e.g. 1e-4"
    if hint is str:
        return (True, value, "") if isinstance(value, str) else (True, str(value), "")
    return True, value, ""


def _dotted(cfg: TrainConfig, name: str) -> Any:
    value: Any = cfg
    for part in name.split("."):
        value = getattr(value, part)
    return value


def _short(value: Any) -> str:
    """`value` as a message shows it: a 5,000-digit number is cut, never printed whole."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def validate(cfg: TrainConfig) -> list[str]:
    """Every range/consistency problem of a built config, each as 'field: problem; fix'."""
    e: list[str] = []

    def need(cond: bool, msg: str) -> None:
        if not cond:
            e.append(msg)

    need(cfg.num_prompts_per_step >= 1, f"num_prompts_per_step: {cfg.num_prompts_per_step} must be >= 1")
    need(
        cfg.num_generations_per_prompt >= 2,
        f"num_generations_per_prompt: {cfg.num_generations_per_prompt} must be >= 2 (GRPO compares a group)",
    )
    gbs = max(1, cfg.global_batch_size)
    need(
        cfg.micro_batch_size >= 1 and gbs % max(1, cfg.micro_batch_size) == 0,
        f"micro_batch_size: {cfg.micro_batch_size} must divide the global batch {gbs}; e.g. {math.gcd(gbs, 64)}",
    )
    prompts, updates = cfg.num_prompts_per_step, cfg.updates_per_rollout
    need(
        updates >= 1 and prompts % max(1, updates) == 0,
        f"updates_per_rollout: {updates} must be >= 1 and split the {prompts} prompts of a step into equal "
        f"mini-batches of whole prompts; e.g. 1 or {math.gcd(prompts, 4)}",
    )
    if cfg.num_prompts_per_step >= 1 and cfg.num_generations_per_prompt >= 1:
        vs = cfg.validation_start
        need(
            cfg.max_steps == 0 or cfg.max_steps >= vs,
            f"max_steps: {cfg.max_steps} stops before the validation start step {vs} (no checkpoint would be "
            f"written); set max_steps >= {vs}, or 0 for {vs + 1}",
        )
    need(cfg.max_steps >= 0, f"max_steps: {cfg.max_steps} must be >= 0 (0 = validation start + 1)")
    for name in ("learning_rate", "adam_epsilon", "grad_clip_norm", "clip_epsilon"):
        need(getattr(cfg, name) > 0, f"{name}: {getattr(cfg, name)} must be > 0")
    for name, most in UPPER_BOUNDS.items():
        value = _dotted(cfg, name)
        need(value <= most, f"{name}: {value} must be at most {most:g} ({BOUND_REASONS[name]})")
    for name in ("adam_beta1", "adam_beta2"):
        need(0 <= getattr(cfg, name) < 1, f"{name}: {getattr(cfg, name)} must be in [0, 1)")
    need(cfg.weight_decay >= 0, f"weight_decay: {cfg.weight_decay} must be >= 0")
    for prefix, temp, top_p in (
        ("rollout_", cfg.rollout_temperature, cfg.rollout_top_p),
        ("eval.", cfg.eval.temperature, cfg.eval.top_p),
    ):
        need(temp >= 0, f"{prefix}temperature: {temp} must be >= 0 (0 = greedy)")
        need(0 < top_p <= 1, f"{prefix}top_p: {top_p} must be in (0, 1]")
    need(cfg.max_new_tokens >= 1, f"max_new_tokens: {cfg.max_new_tokens} must be >= 1")
    need(cfg.eval.max_new_tokens >= 1, f"eval.max_new_tokens: {cfg.eval.max_new_tokens} must be >= 1")
    need(cfg.eval.k >= 1, f"eval.k: {cfg.eval.k} must be >= 1")
    need(0 < cfg.eval.target < 1, f"eval.target: {cfg.eval.target} must be in (0, 1)")
    need(cfg.eval.samples >= 1, f"eval.samples: {cfg.eval.samples} must be >= 1")
    need(
        cfg.task != BUILTIN_TASK or cfg.eval.samples <= 251,
        f"eval.samples: {cfg.eval.samples} must be in 1..251 (the addition task's validation set)",
    )
    need(
        cfg.model in BUILTIN_MODELS or (user_path(cfg.model) / "config.json").is_file(),
        f"model: {cfg.model!r} is neither {' nor '.join(BUILTIN_MODELS)} nor a Hugging Face model directory "
        "(a folder with config.json and the weights)",
    )
    need(
        cfg.task == BUILTIN_TASK or user_path(cfg.task).is_file(),
        f"task: {cfg.task!r} is neither {BUILTIN_TASK!r} nor a task spec file (e.g. trainer/policy/tasks/*.toml)",
    )
    need(
        re.fullmatch(r"auto|cpu|cuda(:\d+)?", cfg.device) is not None,
        f"device: {cfg.device!r} is not auto, cpu, cuda or cuda:N",
    )
    need(cfg.threads >= 1, f"threads: {cfg.threads} must be >= 1")
    need(cfg.ray_workers >= 1, f"ray_workers: {cfg.ray_workers} must be >= 1")
    need(
        0 < cfg.vllm_gpu_memory_utilization <= 1,
        f"vllm_gpu_memory_utilization: {cfg.vllm_gpu_memory_utilization} must be in (0, 1]",
    )
    need(cfg.checkpoint.max_pending >= 1, f"checkpoint.max_pending: {cfg.checkpoint.max_pending} must be >= 1")
    w = cfg.warmup
    need(w.batch_size >= 1, f"warmup.batch_size: {w.batch_size} must be >= 1")
    need(w.learning_rate > 0, f"warmup.learning_rate: {w.learning_rate} must be > 0")
    need(w.max_batches >= 0, f"warmup.max_batches: {w.max_batches} must be >= 0")
    need(w.check_every >= 1, f"warmup.check_every: {w.check_every} must be >= 1")
    warms_up = w.enabled and cfg.model == "tiny" and cfg.task == BUILTIN_TASK  # as the trainer decides
    need(
        not warms_up or 0 <= w.stop_dev_accuracy < cfg.eval.target,
        f"warmup.stop_dev_accuracy: {w.stop_dev_accuracy} must be below eval.target {cfg.eval.target} "
        "(the init must score below the target so GRPO earns the crossing)",
    )
    for name in ("submission_org", "submission_platform", "config_filename"):
        need(getattr(cfg, name) != "", f"{name}: must not be empty (the mllog requires it)")
    return e
