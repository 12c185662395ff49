"""The session's default trained run, evaluated once here; each attack works on its own copy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integrity.forge import copy_run


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread() -> Iterator[None]:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model on shared cores: oversubscribed threads are ten times slower
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def evaluated_run(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the default trained run with every checkpoint evaluated (`recorder eval --all`)."""
    from evaluator.session import evaluate_run
    from evaluator.settings import Options

    run = copy_run(trained_run, tmp_path_factory.mktemp("evaluated"), evaluations=False)
    summary = evaluate_run(run, Options(all=True))
    assert [o.status for o in summary.outcomes] == ["scored", "scored"]
    return run


@pytest.fixture
def attacked(evaluated_run: Path, tmp_path: Path) -> Path:
    """This test's own copy of the evaluated run, to attack."""
    return copy_run(evaluated_run, tmp_path)
