"""What `recorder eval`'s spinner says it waits for is what it is doing: with Ray workers, starting Ray (the
longest part of a first result on a small machine), not only loading torch."""

from __future__ import annotations

import pytest

from evaluator.settings import Options
from recorder.cli.evaluation.evaluate import _waiting_for


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (Options(), "eval: verifying the run, loading torch and the model"),
        (Options(workers=2), "eval: verifying the run, starting Ray, 2 worker(s) each loading torch and the model"),
        (Options(ray_address="local"), "starting Ray, 1 worker(s)"),
        (Options(ray_address="ray://head:10001"), "connecting to Ray at ray://head:10001, 1 worker(s)"),
    ],
)
def test_the_wait_names_what_the_first_result_waits_for(options: Options, says: str) -> None:
    assert says in _waiting_for(options)
