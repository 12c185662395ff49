"""The settings of one `recorder zero-shot` command (validated when built)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.loading import ModelCode
from evaluator.zero_shot.task_sources import TASKS, Sources

Holdout = Literal["on", "off", "record"]
MAX_GAP = 0.005
# The largest tolerance the check takes (nats per token): neighbouring checkpoints of one run differ by more,
# so a wider gap no longer tells the training's weights from others and the check would pass anything.
MAX_GAP_CEILING = 0.1


@dataclass(frozen=True, slots=True, kw_only=True)
class ZeroShotOptions:
    """Tasks and their data, the holdout check, the model's code and numerics, the workers, the output."""

    tasks: tuple[str, ...] = TASKS
    limit: int | None = None  # examples per task
    hf_cache: Path | None = None
    data_dir: Path | None = None
    online: bool = False
    log_samples: bool = False
    holdout: Holdout = "on"
    max_gap: float = MAX_GAP
    holdout_data: Path | None = None
    train_world_size: int | None = None
    code: ModelCode = field(default_factory=ModelCode)
    dtype: Literal["fp32", "bf16"] = "fp32"
    device: str = "auto"
    batch_size: int = 32
    workers: int | None = None
    ray_address: str | None = None
    out: Path | None = None
    task: Path | None = None  # a recorder run imported with a task spec: that spec, for its fingerprint check
    epoch: int | None = None  # a team run's fsdp2_epoch_N (default: the largest)
    config_dir: Path | None = None  # where all_config.yaml and train_metadata.yaml are (default: the run's)
    tokenizer: Path | None = None  # replaces train_metadata.yaml's tokenizer
    skip_capacity: bool = True  # MoE capacity off while scoring
    processes: int | None = None  # --nproc: processes (devices) one checkpoint's requests are split across;
    # None: the CUDA devices its worker sees when scoring on CUDA, else 1
    sources: Sources = field(default_factory=dict)  # --task-source: a task's hub dataset instead of the default

    def __post_init__(self) -> None:
        problems = []
        if self.limit is not None and self.limit < 1:
            problems.append(f"--limit {self.limit}: at least 1 example per task")
        if self.batch_size < 1:
            problems.append(f"--batch-size {self.batch_size}: at least 1")
        if self.workers is not None and self.workers < 1:
            problems.append(f"--workers {self.workers}: at least 1")
        if self.processes is not None and self.processes < 1:
            problems.append(f"--nproc {self.processes}: at least 1")
        if not 0 <= self.max_gap <= MAX_GAP_CEILING:  # NaN fails every comparison: refused here too
            problems.append(
                f"--holdout-max-gap {self.max_gap} (EVAL_HOLDOUT_MAX_GAP): a finite gap from 0 to {MAX_GAP_CEILING} "
                f"(default {MAX_GAP})"
            )
        if self.train_world_size is not None and self.train_world_size < 1:
            problems.append(f"--train-world-size {self.train_world_size}: at least 1")
        if self.epoch is not None and self.epoch < 0:
            problems.append(f"--epoch {self.epoch}: not negative")
        if self.code.holdout_fn is not None and self.code.root is None:
            problems.append("--holdout-fn needs --model-code: the tree its module is imported from")
        if self.code.factory is not None and self.code.root is None:
            problems.append("--model-factory needs --model-code: the tree pkg.module:function is imported from")
        if problems:
            raise ZeroShotInputError("; ".join(problems))
