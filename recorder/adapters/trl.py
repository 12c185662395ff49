"""Record a Hugging Face `Trainer` or TRL `GRPOTrainer` run as events, with one callback.

    run = RunDir.create("runs")
    args = GRPOConfig(output_dir=str(run.checkpoints), save_strategy="steps", save_steps=1, ...)
    trainer = GRPOTrainer(..., args=args, callbacks=[RecorderCallback(run)])
    trainer.train()

What is recorded, and when (the Trainer's hook order: optimizer step, on_optimizer_step, on_step_end,
logging (on_log), evaluation, saving (on_save)):
- run_opened (if the run has none), init_start when the callback is made, init_stop + run_start +
  block_start at on_train_begin;
- weight_update at on_optimizer_step, i.e. right after `optimizer.step()` returns (step = global_step + 1);
- checkpoint_committed at on_save, with the sha256 of the checkpoint's safetensors file. The Trainer saves
  synchronously, so the save blocks the loop from the last hook before it (on_step_end, on_log or
  on_evaluate) to on_save: that interval is save_begin_ns..save_end_ns and blocked_ns;
- step_metrics once the step is over (after its checkpoint, as the catalogue orders them), from the logged
  values (loss, reward, grad_norm, tokens from num_tokens, step_s from step_time; the rest under `extra`);
- block_stop and train_stop (completed) at on_train_end. A crash leaves no train_stop and an unclosed
  segment, which `recorder verify` reports.
Only the main process (`state.is_world_process_zero`) records. Samples are completions: per-device batch x
gradient accumulation x world size per optimizer step. No fingerprint is computed (it is {} and
`source: "trl"` says who wrote the event).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from recorder.adapters.errors import MissingWeightsError
from recorder.checkpoints.formats import CheckpointFormat
from recorder.provenance import provenance
from recorder.store.kinds import (
    BlockStart,
    BlockStop,
    CheckpointCommitted,
    InitStart,
    InitStop,
    Payload,
    RunOpened,
    RunStart,
    StepMetrics,
    TrainStop,
    WeightUpdate,
)
from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir

SOURCE: Final = "trl"
# The file a checkpoint's sha256 covers, in order of preference, with the format recorded for it.
WEIGHT_FILES: tuple[tuple[str, CheckpointFormat], ...] = (
    ("model.safetensors", "safetensors"),
    ("adapter_model.safetensors", "safetensors-adapter"),
    ("model.safetensors.index.json", "safetensors-index"),
)
# Logged values that become step_metrics columns (the rest go under `extra`).
RENAMED = {"loss": "loss", "reward": "reward", "grad_norm": "grad_norm", "step_time": "step_s"}
SUMMARY_KEY = "train_runtime"  # present only in the Trainer's end-of-training summary log


def sha256_file(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


def samples_per_step(args: TrainingArguments) -> int:
    return int(args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size)


def step_metrics(logs: dict[str, Any], tokens_before: float | None, samples: int) -> StepMetrics:
    """The step_metrics payload from one `on_log` dict (TRL's num_tokens is cumulative: take the delta)."""
    named: dict[str, float] = {}
    extra: dict[str, float] = {}
    tokens = None
    for key, value in logs.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if key in RENAMED:
            named[RENAMED[key]] = value
        elif key == "num_tokens":
            tokens = value - (tokens_before or 0.0)
        else:
            extra[key] = value
    return StepMetrics(
        samples=samples,
        loss=named.get("loss"),
        reward=named.get("reward"),
        grad_norm=named.get("grad_norm"),
        step_s=named.get("step_s"),
        tokens=tokens,
        extra=extra,
    )


def layout_problems(args: TrainingArguments, run: RunDir) -> list[str]:
    """Settings under which the evaluator could not use the recorded checkpoints."""
    problems = []
    out = Path(str(args.output_dir)).resolve()
    if run.path.resolve() not in out.parents:
        problems.append(
            f"output_dir {args.output_dir} is outside the run directory {run.path}: checkpoint paths "
            "are recorded relative to the run, and `recorder eval` refuses paths that leave it; use "
            "output_dir=str(run.checkpoints)"
        )
    if args.save_total_limit:
        problems.append(
            f"save_total_limit={args.save_total_limit} deletes committed checkpoints: the 6.1 rule "
            "needs every one from the validation start on"
        )
    return problems


class RecorderCallback(TrainerCallback):
    """A `transformers.TrainerCallback` that appends the run's events to `run` (writer `trainer`)."""

    def __init__(
        self,
        run: RunDir | Path | str,
        *,
        writer: str = "trainer",
        benchmark: str | None = None,
        ruleset: str | None = None,
        division: str | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.run = run if isinstance(run, RunDir) else RunDir.open(run)
        self.writer_name = writer
        self.benchmark, self.ruleset, self.division = benchmark, ruleset, division
        self.clock = clock
        self.created_ns = clock()  # init_start: model and trainer setup happen after the user makes this
        self.log: LogWriter | None = None
        self._mark_ns = 0  # the last hook before a possible save
        self._metrics: tuple[int, StepMetrics] | None = None
        self._tokens: float | None = None
        self._updates: dict[int, int] = {}  # step -> its weight_update time

    def _append(self, payload: Payload, **fields: Any) -> None:
        if self.log is not None:
            self.log.append(payload, **fields)

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if not state.is_world_process_zero or self.log is not None:
            return
        for problem in layout_problems(args, self.run):
            warnings.warn(problem, stacklevel=2)
        opened = any(e.kind == "run_opened" for e in read_run(self.run).events)
        self.log = LogWriter(self.run, self.writer_name, clock=self.clock)
        gbs = samples_per_step(args)
        if not opened:
            self._append(self._opened(args, gbs), time_ns=self.created_ns)
        self._append(InitStart(), time_ns=self.created_ns)
        now = self.clock()
        self._append(InitStop(), time_ns=now)
        self._append(RunStart(), time_ns=now)
        self._append(BlockStart(), step=state.global_step + 1, samples_count=state.global_step * gbs, time_ns=now)

    def _opened(self, args: TrainingArguments, gbs: int) -> RunOpened:
        prov = provenance()
        for name in ("trl", "accelerate", "datasets"):
            try:
                prov["packages"][name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        config = json.loads(args.to_json_string())  # type: ignore[no-untyped-call]
        return RunOpened(
            benchmark=self.benchmark,
            ruleset=self.ruleset,
            division=self.division,
            global_batch_size=gbs,
            config=config,
            provenance=prov,
            resumed_from=None,
            source=SOURCE,
        )

    def on_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        # The Trainer increments global_step after this hook: the step just taken is global_step + 1.
        step = state.global_step + 1
        now = self.clock()
        self._flush_metrics()
        self._updates[step] = now
        self._append(WeightUpdate(), step=step, samples_count=step * samples_per_step(args), time_ns=now)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        self._mark_ns = self.clock()

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._mark_ns = self.clock()
        if self.log is None or not logs or SUMMARY_KEY in logs:
            return
        metrics = step_metrics(logs, self._tokens, samples_per_step(args))
        if isinstance(logs.get("num_tokens"), (int, float)) and math.isfinite(logs["num_tokens"]):
            self._tokens = float(logs["num_tokens"])
        self._metrics = (state.global_step, metrics)

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        self._mark_ns = self.clock()

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        if self.log is None:
            return
        end = self.clock()
        step = state.global_step
        directory = Path(str(args.output_dir)) / f"checkpoint-{step}"
        weights, fmt = self._weights(directory)
        sha256, size = sha256_file(weights)
        model = kwargs.get("model")
        dtype = str(getattr(model, "dtype", "")).removeprefix("torch.") or None
        update_ns = self._updates.get(step)
        begin = max(self._mark_ns, update_ns or 0)
        committed = CheckpointCommitted(
            path=Path(os.path.relpath(directory.resolve(), self.run.path.resolve())).as_posix(),
            sha256=sha256,
            bytes=size,
            weight_update_ns=update_ns,
            save_begin_ns=begin,
            save_end_ns=end,
            blocked_ns=end - begin,
            fingerprint={},
            format=fmt,
            dtype=dtype,
            source=SOURCE,
        )
        self._append(committed, step=step, samples_count=step * samples_per_step(args), time_ns=end)
        self._flush_metrics()

    def _weights(self, directory: Path) -> tuple[Path, CheckpointFormat]:
        for name, fmt in WEIGHT_FILES:
            if (directory / name).is_file():
                return directory / name, fmt
        raise MissingWeightsError(
            f"{directory}: no {' or '.join(n for n, _ in WEIGHT_FILES)}: save with "
            "save_safetensors=True (the default) so the checkpoint can be hashed"
        )

    def _flush_metrics(self) -> None:
        if self._metrics is not None:
            step, metrics = self._metrics
            self._metrics = None
            self._append(metrics, step=step, samples_count=step * int(metrics.samples or 0))

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self.log is None:
            return
        self._flush_metrics()
        step, samples = state.global_step, state.global_step * samples_per_step(args)
        now = self.clock()
        self._append(BlockStop(), step=step, samples_count=samples, time_ns=now)
        self._append(TrainStop(status="completed", reason=""), step=step, samples_count=samples, time_ns=now)
        self.log.close()
        self.log = None
