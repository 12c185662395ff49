"""Every pool of evaluation workers against the workers contract (tests/contract/workers_contract.py). The
vLLM pool's subclass is in tests/evaluator/test_vllm_backend.py, which runs in the vLLM environment."""

from __future__ import annotations

import pytest

from evaluator.cluster.workers import LocalWorkers, RayWorkers, Workers
from tests.contract.workers_contract import WorkersContract


class TestLocalWorkers(WorkersContract):
    def start(self) -> Workers:
        return LocalWorkers()


class TestLocalWorkersTwoThreads(WorkersContract):
    """Torch's thread count changes no completion either."""

    def start(self) -> Workers:
        return LocalWorkers(threads=2)


@pytest.mark.usefixtures("ray_cluster")
@pytest.mark.slow  # the default tier keeps two Ray workers against one local (evaluator/test_invariance)
class TestRayWorkers(WorkersContract):
    """Two actors, each scoring a contiguous shard of the plan by task."""

    def start(self) -> Workers:
        return RayWorkers(2)
