"""`first_difference`: where a re-evaluation first parts from a recorded results.json (hand-made rows)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from evaluator.auditing.reproduction import SAMPLE_FIELDS, RecordedEvaluation, first_difference
from recorder.results.claims import EvaluationClaims
from recorder.results.evaluation import SampleRow


def _row(task: int, sample: int, correct: bool) -> dict[str, Any]:
    return {
        "task": task,
        "sample": sample,
        "seed": 1000 * task + sample,
        "prompt_sha256": f"{task:064x}",
        "target_sha256": f"{task + 1:064x}",
        "completion_sha256": f"{task + 1 if correct else 7:064x}",
        "reward": 1.0 if correct else 0.0,
        "correct": correct,
    }


ROWS = [_row(0, 0, True), _row(0, 1, False), _row(1, 0, False), _row(1, 1, False)]  # as the file holds them
REDONE = [SampleRow(**r) for r in ROWS]  # as the re-evaluation gives them


def _recorded(rows: list[dict[str, Any]], accuracy: float | None = 0.5, score: object = 0.5) -> RecordedEvaluation:
    claims = EvaluationClaims.of({"score": score, "samples": rows})
    return RecordedEvaluation(step=18, accuracy=accuracy, results="r.json", results_sha256="0" * 64, claims=claims)


def test_every_field_of_a_sample_is_compared() -> None:
    assert sorted(SAMPLE_FIELDS) == sorted(f.name for f in fields(SampleRow))


def test_the_same_bits_are_reproduced() -> None:
    assert first_difference(_recorded([dict(r) for r in ROWS]), REDONE, 0.5) is None


@pytest.mark.parametrize("field", SAMPLE_FIELDS)
def test_any_field_of_a_sample_is_a_difference_named_with_the_sample(field: str) -> None:
    rows = [dict(r) for r in ROWS]
    rows[2][field] = "forged"
    diff = first_difference(_recorded(rows), REDONE, 0.5)
    assert diff is not None and diff.what == f"sample 2 (task 1 sample 0): {field}"
    assert (diff.recorded, diff.recomputed) == ("forged", ROWS[2][field])


def test_a_true_for_a_one_is_a_difference() -> None:
    rows = [dict(r) for r in ROWS]
    rows[0]["reward"] = True  # equal to 1.0 in Python, but not the bits recorded by the evaluator
    diff = first_difference(_recorded(rows), REDONE, 0.5)
    assert diff is not None and diff.what.endswith(": reward")


def test_missing_or_extra_samples_differ() -> None:
    short = first_difference(_recorded(ROWS[:3]), REDONE, 0.5)
    assert short is not None and (short.what, short.recorded, short.recomputed) == ("samples", 3, 4)
    assert first_difference(_recorded([*ROWS, _row(2, 0, True)]), REDONE, 0.5) is not None


def test_the_claimed_accuracy_and_the_file_score_must_both_be_the_recomputed_bits() -> None:
    claimed = first_difference(_recorded(ROWS, accuracy=0.5000000000000001), REDONE, 0.5)
    assert claimed is not None and claimed.what == "accuracy" and "0.5000000000000001 recorded" in str(claimed)
    in_file = first_difference(_recorded(ROWS, score=0.75), REDONE, 0.5)
    assert in_file is not None and str(in_file) == "results.json score: 0.75 recorded, 0.5 recomputed"
    assert first_difference(_recorded(ROWS, accuracy=None), REDONE, 0.5) is not None
