"""The score and every completion are the same bits for any batch size and any number of workers."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from evaluator.cluster.workers import Workers, start_workers
from evaluator.session import evaluate_run
from evaluator.settings import Options
from tests.evaluator.synth import record_run


def _evaluate(
    base: Path, tmp: Path, name: str, options: Options, factory: Callable[[int, str | None], Workers] = start_workers
) -> tuple[float, list[str], str]:
    run = tmp / name / base.name
    shutil.copytree(base, run)
    s = evaluate_run(run, options, workers_factory=factory)
    assert [o.status for o in s.outcomes] == ["scored"], s.outcomes
    doc = json.loads((run / str(s.outcomes[0].results)).read_text())
    return doc["score"], [x["completion_sha256"] for x in doc["samples"]], doc["settings"]["workers"]


@pytest.fixture(scope="module")
def sampling_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Unsharpened random weights: at temperature 0.1 the samples of one task still differ by seed, so equal
    # completions across batchings are evidence, not a constant.
    run = record_run(tmp_path_factory.mktemp("inv"), steps=18, target=1.0, samples=16, sharpen=1.0)
    return run.path


def test_batch_size_does_not_change_a_single_completion(sampling_run: Path, tmp_path: Path) -> None:
    outcomes = {b: _evaluate(sampling_run, tmp_path, f"b{b}", Options(batch_size=b)) for b in (1, 7, 64)}
    score, completions, _ = outcomes[64]
    assert len(set(completions)) > len(completions) // 4  # samples really differ by seed
    for b in (1, 7):
        assert outcomes[b][0] == score and outcomes[b][1] == completions, f"batch size {b} differs"


def test_two_ray_workers_equal_one_local_worker(sampling_run: Path, tmp_path: Path, ray_cluster: None) -> None:
    one = _evaluate(sampling_run, tmp_path, "w1", Options(workers=1, batch_size=7))
    two = _evaluate(sampling_run, tmp_path, "w2", Options(workers=2, batch_size=7))
    assert two[2].startswith("ray:2") and one[2] == "local"
    assert (two[0], two[1]) == (one[0], one[1])


def test_torch_thread_count_does_not_change_a_completion(sampling_run: Path, tmp_path: Path) -> None:
    from evaluator.cluster.workers import LocalWorkers

    one = _evaluate(sampling_run, tmp_path, "t1", Options(batch_size=64))
    two = _evaluate(sampling_run, tmp_path, "t2", Options(batch_size=64), lambda n, a: LocalWorkers(threads=2))
    assert one[2] == "local" and two[2] == "local (2 threads)"
    assert (two[0], two[1]) == (one[0], one[1])
