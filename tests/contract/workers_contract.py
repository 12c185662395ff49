"""The contract every pool of evaluation workers keeps (evaluator/cluster/workers.py's `Workers`), as one abstract
test class. A pool's subclass says how to start it (`start`), what it reproduces (`sampling`) and, where it
needs one, the tiny checkpoint's width (`hidden_size`); on a real
tiny checkpoint and the shipped addition task the class checks:

- `score` returns one sample per (task, sample) of the plan, in plan order;
- every sample is the in-process scorer's (`LocalWorkers`) for the same plan, bit for bit: the number of
  workers changes nothing;
- the batch size and how the plan is split across calls change no completion;
- every slot (`slots()`: one checkpoint per worker) scores exactly what the pool does;
- the completions differ by seed (so that equality above is evidence, not a constant).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from evaluator.cluster.workers import LocalWorkers, Workers
from evaluator.passk import sample_plan
from evaluator.results_files import Sample
from evaluator.scoring import Generation, Loading
from trainer.policy.taskspec import shipped

TASKS, K = 6, 4
PLAN = sample_plan(range(TASKS), K)
SEEDED = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 3}


def _gen(batch_size: int, sampling: dict[str, Any]) -> Generation:
    return Generation(batch_size=batch_size, **sampling)


class WorkersContract:
    """Subclass with `start()`; `sampling` is what the pool reproduces."""

    sampling: ClassVar[dict[str, Any]] = SEEDED
    hidden_size: ClassVar[int] = 32  # of the tiny checkpoint scored

    def start(self) -> Workers:
        raise NotImplementedError

    @pytest.fixture(scope="class")
    def checkpoint(self, tmp_path_factory: pytest.TempPathFactory) -> str:
        from tests.evaluator.synth import record_run

        run = record_run(
            tmp_path_factory.mktemp("workers"), steps=18, samples=TASKS, sharpen=1.0, hidden_size=self.hidden_size
        )
        return str(run.path / "checkpoints" / "step_0000018")

    @pytest.fixture(scope="class")
    def loading(self) -> Loading:
        return Loading(task=str(shipped("addition")))

    @pytest.fixture(scope="class")
    def pool(self, checkpoint: str, loading: Loading) -> Iterator[Workers]:
        workers = self.start()
        try:
            workers.load(checkpoint, None, loading)
            yield workers
        finally:
            workers.close()

    @pytest.fixture(scope="class")
    def reference(self, checkpoint: str, loading: Loading) -> list[Sample]:
        local = LocalWorkers()
        try:
            local.load(checkpoint, None, loading)
            return local.score(PLAN, _gen(len(PLAN), self.sampling))
        finally:
            local.close()

    def test_one_sample_per_planned_sample_in_plan_order(self, pool: Workers) -> None:
        samples = pool.score(PLAN, _gen(5, self.sampling))
        assert [(s.task, s.sample) for s in samples] == PLAN

    @pytest.mark.parametrize("batch_size", [1, 7, len(PLAN)])
    def test_every_sample_is_the_in_process_scorers(
        self, pool: Workers, reference: list[Sample], batch_size: int
    ) -> None:
        assert pool.score(PLAN, _gen(batch_size, self.sampling)) == reference

    def test_the_plan_split_across_calls_changes_nothing(self, pool: Workers, reference: list[Sample]) -> None:
        cut = 3 * K + 1  # inside a task's samples
        gen = _gen(4, self.sampling)
        assert pool.score(PLAN[:cut], gen) + pool.score(PLAN[cut:], gen) == reference

    def test_each_slot_scores_what_the_pool_does(
        self, pool: Workers, checkpoint: str, loading: Loading, reference: list[Sample]
    ) -> None:
        for slot in pool.slots():
            slot.load(checkpoint, None, loading)
            assert slot.score(PLAN, _gen(3, self.sampling)) == reference, slot.name

    def test_completions_differ_by_seed(self, reference: list[Sample]) -> None:
        assert len({s.completion for s in reference}) > 1
        assert len({s.seed for s in reference}) == len(PLAN)
