"""Where the checkpoints' jobs run: in this process for one checkpoint, else one per Ray actor (one GPU
each where the cluster has one for every actor), the results back in the order of the jobs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evaluator.zero_shot.job import Job, JobResult, ZeroShotWorker, run_job
from recorder.errors import RecorderError

Outcome = JobResult | RecorderError


def run_jobs(jobs: list[Job], *, workers: int | None, address: str | None) -> tuple[list[Outcome], str]:
    """Each job's result (or the RecorderError that stopped it), and a name for the workers used."""
    n = min(workers or len(jobs), len(jobs))
    if n <= 1 and address is None and (workers or 1) == 1:
        return [_local(job) for job in jobs], "local"
    return _on_ray(jobs, n, address)


def _local(job: Job) -> Outcome:
    try:
        return run_job(job)
    except RecorderError as e:
        return e


def _on_ray(jobs: list[Job], n: int, address: str | None) -> tuple[list[Outcome], str]:
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        gpus = 1 if ray.cluster_resources().get("GPU", 0) >= n else 0
        actor = ray.remote(ZeroShotWorker).options(num_cpus=1, num_gpus=gpus)
        actors: list[Any] = [actor.remote() for _ in range(n)]
        pending = [actors[i % n].run.remote(job) for i, job in enumerate(jobs)]
        outcomes = [_get(ray, p) for p in pending]
        for a in actors:
            ray.kill(a)
        return outcomes, f"ray:{n}" + (" (1 GPU each)" if gpus else "")
    finally:
        if started:
            ray.shutdown()


def _get(ray: Any, ref: Any) -> Outcome:
    try:
        result: JobResult = ray.get(ref)
        return result
    except ray.exceptions.RayTaskError as e:
        cause: Callable[..., Any] | BaseException | None = getattr(e, "cause", None)
        if isinstance(cause, RecorderError):
            return cause
        raise
