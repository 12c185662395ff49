"""Where the checkpoints' jobs run: in this process for one checkpoint, else one per Ray actor (one GPU
each where the cluster has one for every actor). Results come back as each job finishes, with progress
from the workers on the way. Whatever ends the loop (the last result, an error, Ctrl-C), every actor this
pool started is killed before it returns, so none is left running on the cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evaluator.cluster.ray_start import start_ray
from evaluator.zero_shot.job import Job, JobResult, Report, ZeroShotWorker, run_job
from recorder.errors import RecorderError

Outcome = JobResult | RecorderError
POLL_S = 0.2  # how often the driver looks at the workers' progress (and can stop on Ctrl-C)


@dataclass(slots=True)
class WorkersUsed:
    """The workers' name ("local", "ray:N", "ray:N (1 GPU each)"), known once they started."""

    name: str = field(default="local")


def run_jobs(
    jobs: list[Job], workers: WorkersUsed, *, count: int | None, address: str | None, report: Report | None = None
) -> Iterator[tuple[int, Outcome]]:
    """(index in `jobs`, its result or the RecorderError that stopped it) as each job finishes, on `count`
    workers (None: one per job). Nothing starts until the iterator is read."""
    n = min(count or len(jobs), len(jobs))
    if n <= 1 and address is None and (count or 1) == 1:
        return _local(jobs, report)
    return _on_ray(jobs, n, address, report, workers)


def _local(jobs: list[Job], report: Report | None) -> Iterator[tuple[int, Outcome]]:
    for i, job in enumerate(jobs):
        try:
            yield i, run_job(job, report)
        except RecorderError as e:
            yield i, e


def _on_ray(
    jobs: list[Job], n: int, address: str | None, report: Report | None, workers: WorkersUsed
) -> Iterator[tuple[int, Outcome]]:
    import ray
    from ray.util.queue import Queue

    started = start_ray(address)
    actors: list[Any] = []
    queue: Any = None
    try:
        # an actor takes a CPU: more actors than the cluster has CPUs would leave a job waiting on an actor
        # that is never placed (the finished ones keep theirs until the end)
        resources = ray.cluster_resources()
        n = max(1, min(n, int(resources.get("CPU", n))))
        gpus = 1 if resources.get("GPU", 0) >= n else 0
        workers.name = f"ray:{n}" + (" (1 GPU each)" if gpus else "")
        queue = Queue(actor_options={"num_cpus": 0})
        actor = ray.remote(ZeroShotWorker).options(num_cpus=1, num_gpus=gpus)
        actors = [actor.remote() for _ in range(n)]
        pending = {actors[i % n].run.remote(job, queue): i for i, job in enumerate(jobs)}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
            _drain(queue, report)
            for ref in ready:
                yield pending.pop(ref), _get(ray, ref)
        _drain(queue, report)
    finally:
        for a in actors:
            ray.kill(a)
        if queue is not None:
            queue.shutdown(force=True)
        if started:
            ray.shutdown()


def _drain(queue: Any, report: Report | None) -> None:
    """Pass on what the workers said since the last look."""
    while not queue.empty():
        what = queue.get_nowait()
        if report is not None:
            report(*what)


def _get(ray: Any, ref: Any) -> Outcome:
    try:
        result: JobResult = ray.get(ref)
        return result
    except ray.exceptions.RayTaskError as e:
        cause: Callable[..., Any] | BaseException | None = getattr(e, "cause", None)
        if isinstance(cause, RecorderError):
            return cause
        raise
