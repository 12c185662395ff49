"""Evaluation workers: one in-process `Scorer`, or N Ray actors (one accelerator each where there are any).

Ray actors are used two ways. With several checkpoints to evaluate, each actor takes a whole checkpoint
(`slots()`: the sweep of one GPU per checkpoint, evaluator/cluster/sweep.py). With one, they split its sample plan
by task in contiguous shards and return samples in plan order. Either way the driver cannot tell: with
per-sample seeds every completion is the same bits (tests/evaluator/test_invariance.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from evaluator.cluster.ray_start import start_ray
from evaluator.command import CommandRun, execute
from evaluator.results_files import Sample
from evaluator.scoring import Generation, Loading, Scorer


class Workers(Protocol):
    """What the driver needs from its workers."""

    name: str

    def load(self, checkpoint_dir: str, texts: list[str] | None, loading: Loading) -> list[float | None]: ...
    def score(self, plan: list[tuple[int, int]], gen: Generation) -> list[Sample]: ...
    def harness(self, name: str, requests: list[Any], batch_size: int) -> list[Any]: ...
    def command(self, argv: list[str]) -> CommandRun: ...
    def placement(self) -> dict[str, Any]: ...
    def slots(self) -> list[Workers]: ...
    def close(self) -> None: ...


def shards(plan: list[tuple[int, int]], n: int) -> list[list[tuple[int, int]]]:
    """`plan` cut into at most `n` contiguous pieces, never splitting a task's samples."""
    tasks = list(dict.fromkeys(t for t, _ in plan))
    size = -(-len(tasks) // n) if tasks else 0
    groups = [set(tasks[i : i + size]) for i in range(0, len(tasks), size)] if size else []
    return [[p for p in plan if p[0] in g] for g in groups]


class LocalWorkers:
    """One worker in this process, with `threads` torch threads (None: torch's default) until `close`.

    One thread by default, like each Ray worker: one worker is one core, and `--workers N` is how more cores
    are used. (On a shared 2-core machine, torch's default of 2 threads made evaluation 9x slower.)
    """

    def __init__(self, threads: int | None = 1) -> None:
        import torch

        self._threads_before = torch.get_num_threads()
        self.name = "local" if threads == 1 else f"local ({threads or 'default'} threads)"
        self._scorer = Scorer(threads)

    def load(self, checkpoint_dir: str, texts: list[str] | None, loading: Loading) -> list[float | None]:
        return [self._scorer.load(checkpoint_dir, texts, loading)]

    def score(self, plan: list[tuple[int, int]], gen: Generation) -> list[Sample]:
        return self._scorer.score(plan, gen)

    def harness(self, name: str, requests: list[Any], batch_size: int) -> list[Any]:
        return self._scorer.harness(name, requests, batch_size)

    def placement(self) -> dict[str, Any]:
        return self._scorer.placement()

    def command(self, argv: list[str]) -> CommandRun:
        return execute(argv)

    def slots(self) -> list[Workers]:
        """One: this process evaluates one checkpoint at a time."""
        return [self]

    def close(self) -> None:
        import torch

        torch.set_num_threads(self._threads_before)


class RayWorkers:
    """`n` Ray actors, each holding its own copy of the checkpoint being evaluated.

    Joins the Ray instance already initialized in this process (a test session's cluster), else starts a
    local one or connects to `address`; shuts down only what it started.
    """

    def __init__(self, n: int, address: str | None = None) -> None:
        import ray

        self._ray = ray
        self._started = start_ray(address)
        gpus = ray.cluster_resources().get("GPU", 0)
        per_actor_gpu = 1 if gpus >= n else 0  # one accelerator each, only when each can have one
        actor = ray.remote(Scorer).options(num_cpus=1, num_gpus=per_actor_gpu)
        self._actors: list[Any] = [actor.remote(threads=1) for _ in range(n)]
        ray.get([a.ready.remote() for a in self._actors])  # start-up done here, not in the first checkpoint
        self.name = f"ray:{n}" + (f" ({per_actor_gpu} GPU each)" if per_actor_gpu else "")

    def load(self, checkpoint_dir: str, texts: list[str] | None, loading: Loading) -> list[float | None]:
        values: list[float | None] = self._ray.get(
            [a.load.remote(checkpoint_dir, texts, loading) for a in self._actors]
        )
        return values

    def score(self, plan: list[tuple[int, int]], gen: Generation) -> list[Sample]:
        parts = shards(plan, len(self._actors))
        results = self._ray.get([a.score.remote(p, gen) for a, p in zip(self._actors, parts, strict=False)])
        return [s for part in results for s in part]

    def harness(self, name: str, requests: list[Any], batch_size: int) -> list[Any]:
        """lm-eval requests split into contiguous shards, one per actor, results back in request order."""
        size = -(-len(requests) // len(self._actors)) if requests else 1
        parts = [requests[i : i + size] for i in range(0, len(requests), size)]
        pending = [a.harness.remote(name, p, batch_size) for a, p in zip(self._actors, parts, strict=False)]
        results = self._ray.get(pending)
        return [r for part in results for r in part]

    def command(self, argv: list[str]) -> CommandRun:
        result: CommandRun = self._ray.get(self._actors[0].command.remote(argv))
        return result

    def placement(self) -> dict[str, Any]:
        """The first actor's (every actor loads the same checkpoint the same way)."""
        placed: dict[str, Any] = self._ray.get(self._actors[0].placement.remote())
        return placed

    def slots(self) -> list[Workers]:
        """One single-actor view per actor: each evaluates a whole checkpoint on its own accelerator."""
        return [ActorSlot(self._ray, a, f"{self.name} #{i}") for i, a in enumerate(self._actors)]

    def close(self) -> None:
        for a in self._actors:
            self._ray.kill(a)
        self._actors = []
        if self._started:
            self._ray.shutdown()


class ActorSlot:
    """One actor of a `RayWorkers`, evaluating whole checkpoints; closing it leaves the actor to its pool."""

    def __init__(self, ray: Any, actor: Any, name: str) -> None:
        self._ray, self._actor, self.name = ray, actor, name

    def load(self, checkpoint_dir: str, texts: list[str] | None, loading: Loading) -> list[float | None]:
        return [self._ray.get(self._actor.load.remote(checkpoint_dir, texts, loading))]

    def score(self, plan: list[tuple[int, int]], gen: Generation) -> list[Sample]:
        samples: list[Sample] = self._ray.get(self._actor.score.remote(plan, gen))
        return samples

    def harness(self, name: str, requests: list[Any], batch_size: int) -> list[Any]:
        results: list[Any] = self._ray.get(self._actor.harness.remote(name, requests, batch_size))
        return results

    def command(self, argv: list[str]) -> CommandRun:
        result: CommandRun = self._ray.get(self._actor.command.remote(argv))
        return result

    def placement(self) -> dict[str, Any]:
        placed: dict[str, Any] = self._ray.get(self._actor.placement.remote())
        return placed

    def slots(self) -> list[Workers]:
        return [self]

    def close(self) -> None:
        pass


def start_workers(n: int, address: str | None = None) -> Workers:
    """One local worker for n == 1 without an address; Ray actors otherwise."""
    if n == 1 and address is None:
        return LocalWorkers()
    return RayWorkers(n, address)
