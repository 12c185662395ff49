"""One checkpoint's evaluation, as a worker runs it: load, recompute the holdout loss, score the tasks with
lm-eval. It writes nothing; the driver compares, writes and prints. Runs in the driver's process or in a
Ray actor (`ZeroShotWorker`), one checkpoint per actor."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.harness.taskset import TaskData
from evaluator.zero_shot.errors import HoldoutMismatch
from evaluator.zero_shot.loading import ModelCode, Weights, build, described, holdout_function, provenance, read
from evaluator.zero_shot.origin.training_run import HoldoutPlan
from recorder.checkpoints.detect import CheckpointInfo
from recorder.imported_code import imported_environment

# What a worker is doing: (checkpoint label, what it starts now, parts done, parts in all). The parts are
# loading, the holdout loss (when planned) and each task; "done" when the checkpoint is finished.
Report = Callable[[str, str, int, int], None]
DONE = "done"


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """Everything a worker needs for one checkpoint (picklable: it travels to Ray actors)."""

    label: str
    info: CheckpointInfo
    tasks: tuple[TaskData, ...]
    limit: int | None
    dtype: str
    device: str
    batch_size: int
    code: ModelCode
    holdout: HoldoutPlan | None
    tokenizer: Path | None = None  # the team's tokenizer (train_metadata.yaml, --tokenizer); None: the checkpoint's
    capacity: bool | None = False  # MoE capacity while scoring (MOE_SKIP_CAPACITY=0 turns it on); None: as the
    # training's config builds the model (capacity on asked of a factory with no switch)
    skip_capacity: bool = True  # capacity off asked (the default); with no switch: verified not to matter
    processes: int | None = None  # processes its requests are split across (NPROC_PER_NODE); None: its devices
    reference: float | None = None  # the logged eval/loss; None: record without comparing
    max_gap: float = 0.005
    log_samples: bool = False
    online: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResult:
    """What a worker found: per-task scores, the recomputed holdout loss, what it loaded and how."""

    label: str
    tasks: dict[str, dict[str, Any]]
    holdout_loss: float | None
    manifest: dict[str, Any]
    tokenizer: dict[str, Any]  # the tokenizer's files as read once: path, each file's size and sha256
    provenance: dict[str, Any] | None
    dtype: str  # torch's name of the dtype the weights were scored in
    device: str
    lm_eval_version: str | None
    aborted: bool = False  # the holdout gap exceeded max_gap: nothing was scored
    processes: int = 1  # processes the requests were split across
    capacity_check: str | None = None  # how "capacity off" was confirmed on the built model
    timings: dict[str, float] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)  # the module files the scoring process imported


def parts(job: Job) -> int:
    """How many parts `report` counts for this job: loading, the holdout loss if planned, each task."""
    return 1 + (job.holdout is not None) + len(job.tasks)


def run_job(job: Job, report: Report | None = None) -> JobResult:
    """Load the checkpoint, recompute its holdout loss (if planned); score unless the gap aborts it. `report`
    hears of each part as it starts. With the team's model code, every module executed meanwhile is checked
    (exec_audit.py) when its provenance is taken."""
    if job.code.factory is None:
        return _run(job, report)
    from recorder.checkpoints.team_code import exec_audit

    with exec_audit.watching():
        return _run(job, report)


def _run(job: Job, report: Report | None) -> JobResult:
    total = parts(job)
    say: Report = report or (lambda label, doing, done, of: None)
    say(job.label, "loading", 0, total)
    t0 = time.monotonic()
    device = resolve_device(job.device)
    weights = read(job.info, tokenizer=job.tokenizer, code=job.code)
    timings = {"load_s": time.monotonic() - t0}
    loss = None
    if job.holdout is not None:
        say(job.label, "holdout loss", 1, total)
        t = time.monotonic()
        loss = _holdout(weights, job.holdout, job, device)
        timings["holdout_s"] = time.monotonic() - t
    tasks: dict[str, dict[str, Any]] = {}
    version, check = None, None
    dtype, where = job.dtype, device
    processes = job.processes or visible_devices(device)
    aborted = loss is not None and not _within(loss, job)
    if not aborted:
        model = build(weights, dtype=job.dtype, device=device, code=job.code, capacity=job.capacity)
        check = _confirm_capacity(model, weights, job, device)
        dtype, where = described(model)
        t = time.monotonic()
        tasks, version = _score(model, weights, job, processes, say)
        timings["score_s"] = time.monotonic() - t
    say(job.label, DONE, total, total)
    code = provenance(job.code)
    environment = imported_environment(job.code.root).to_dict()  # hashed once the scoring has imported all
    return JobResult(
        label=job.label,
        tasks=tasks,
        holdout_loss=loss,
        manifest=weights.manifest.to_dict(),
        tokenizer=weights.tokenizer_files.manifest(),
        provenance=None if code is None else code.to_dict(),
        dtype=dtype,
        device=where,
        lm_eval_version=version,
        aborted=aborted,
        processes=processes,
        capacity_check=check,
        timings=timings,
        environment=environment,
    )


def _confirm_capacity(model: Any, weights: Any, job: Job, device: str) -> str | None:
    """Capacity off confirmed on the built model (a team's factory), by the fp32 probe: on the scoring model,
    or in bf16 (where rounding alone moves a token's expert with its batch) on an fp32 build of the same
    weights. A model built with no switch, capacity off asked, must pass it too: then capacity is not
    applicable (no row depends on its batch), and one that fails is refused naming the ways to switch it."""
    from evaluator.zero_shot.capacity_probe import confirm_capacity_off

    unswitched = job.capacity is None and job.code.switch is None and job.skip_capacity
    if job.code.factory is None or not (job.capacity is False or unswitched):
        return None
    probed = model
    if job.dtype != "fp32":
        probed = build(weights, dtype="fp32", device=device, code=job.code, capacity=job.capacity)
    said = confirm_capacity_off(probed, job.code.factory, switched=not unswitched)
    where = "" if job.dtype == "fp32" else " (an fp32 build of the same weights, probed for the bf16 scoring)"
    return (f"{NOT_APPLICABLE}: no capacity switch, and " if unswitched else "") + said + where


NOT_APPLICABLE = "not applicable"  # a model with no capacity switch whose rows do not depend on their batch


def _holdout(weights: Any, plan: HoldoutPlan, job: Job, device: str) -> float:
    """eval/loss as training computed it: the model in training's parameter dtype with its MoE capacity, then
    the team's own loss function (--holdout-fn) or the built-in recomputation."""
    from evaluator.zero_shot.holdout_check.holdout import holdout_loss

    model = build(weights, dtype=plan.dtype, device=device, code=job.code, capacity=plan.capacity)
    own = holdout_loss(model, weights.tokenizer, plan, batch_size=job.batch_size)
    hook = holdout_function(job.code)
    if hook is None:
        return own
    import torch

    with torch.no_grad():
        value = hook(model, weights.tokenizer, dict(plan.config), plan.world_size)
    return cross_checked(value, own, job.code.holdout_fn, job.max_gap)


def cross_checked(value: Any, own: float, spec: str | None, max_gap: float) -> float:
    """The team's holdout function's value, once the project's own recomputation over the same data, packing
    and numerics agrees with it: a function could return the logged loss whatever the weights are, so its
    word alone passes nothing. HoldoutMismatch naming both values otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise HoldoutMismatch(f"--holdout-fn {spec} returned {value!r}, not a finite loss: not scored")
    if not abs(float(value) - own) <= max_gap:
        raise HoldoutMismatch(
            f"--holdout-fn {spec} returned eval/loss {float(value):.6f}, but the recomputation over the same "
            f"holdout data, packing and numerics gives {own:.6f} (gap {abs(float(value) - own):.6f} > "
            f"{max_gap}): the function does not report these weights' loss; not scored"
        )
    return float(value)


def _within(loss: float, job: Job) -> bool:
    """Whether a recomputed holdout loss lets the checkpoint be scored: finite, and within max_gap of the
    logged loss when there is one (a NaN gap passes no comparison: it aborts)."""
    if not math.isfinite(loss):
        return False
    return job.reference is None or abs(loss - job.reference) <= job.max_gap


def resolve_device(device: str) -> str:
    """ "auto": this worker's accelerator when it has one, else the CPU."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def visible_devices(device: str) -> int:
    """The default split of one checkpoint (NPROC_PER_NODE's: the visible GPUs): the CUDA devices this worker
    sees when it scores on CUDA (a Ray actor sees the one it was given), else 1."""
    if device != "cuda":
        return 1
    import torch

    return max(1, torch.cuda.device_count())


def _score(
    model: Any, weights: Weights, job: Job, processes: int, say: Report
) -> tuple[dict[str, dict[str, Any]], str | None]:
    import os

    import lm_eval

    from evaluator.harness.adapter import CheckpointLM
    from evaluator.harness.lm_eval_run import quiet, simple_evaluate
    from evaluator.zero_shot.split import ScoringModel, split_compute

    if not job.online:
        os.environ["HF_DATASETS_OFFLINE"] = os.environ["HF_HUB_OFFLINE"] = "1"
    first, started = parts(job) - len(job.tasks), list[str]()

    def on_task(name: str) -> None:
        say(job.label, name, first + len(started), parts(job))
        started.append(name)

    with quiet(), ExitStack() as stack:
        if processes > 1:
            what = ScoringModel(  # each process builds the tokenizer from the bytes this one read and hashed
                info=job.info, tokenizer=weights.tokenizer_files, dtype=job.dtype, code=job.code, capacity=job.capacity
            )
            compute = stack.enter_context(split_compute(what, resolve_device(job.device), processes))
            lm = CheckpointLM(compute, batch_size=job.batch_size, on_task=on_task)
        else:
            lm = CheckpointLM.local(model, weights.tokenizer, batch_size=job.batch_size, on_task=on_task)
        out = simple_evaluate(lm_eval, lm, job.tasks, limit=job.limit, stderr=True)
    return {t.name: _task(out, t, job.log_samples) for t in job.tasks}, out.get("lm_eval_version")


def _task(out: dict[str, Any], task: TaskData, log_samples: bool) -> dict[str, Any]:
    from evaluator.harness.lm_eval_run import sample_row

    metrics = out["results"][task.name]
    row: dict[str, Any] = {
        "metric": task.metric,
        "score": float(metrics[f"{task.metric},none"]),
        "stderr": _number(metrics.get(f"{task.metric}_stderr,none")),
        "n": int(out["n-samples"][task.name]["effective"]),
        "of": int(out["n-samples"][task.name]["original"]),
        "metrics": {
            k.removesuffix(",none"): v for k, v in metrics.items() if k.endswith(",none") and isinstance(v, float)
        },
        "data": [str(f) for f in task.files] or [str(task.data)],
        "data_sha256": task.data_sha256,
        "version": _text(out["versions"].get(task.name)),
        "content_sha256": task.content_sha256,
    }
    if log_samples:
        row["samples"] = [sample_row(s) for s in out["samples"][task.name]]
    return row


def _text(value: Any) -> str | None:
    """lm-eval's task version as text (its YAML may give a number)."""
    return None if value is None else str(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


class ZeroShotWorker:
    """A Ray actor that evaluates whole checkpoints, one at a time (one accelerator each where there are)."""

    def __init__(self) -> None:
        import torch

        torch.set_num_threads(1)

    def ready(self) -> bool:
        return True

    def run(self, job: Job, queue: Any = None) -> JobResult:
        """`queue` (a ray.util.queue.Queue): where this worker's progress goes, for the driver to show."""
        report = None if queue is None else (lambda *what: queue.put_nowait(what))
        return run_job(job, report)
