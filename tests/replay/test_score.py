"""Olympic scoring: ours is the result summarizer's own, checked against `_compute_strong_score_standalone`
on a compliant set of derived logs; and the `compute_score` CLI crash that makes us call it directly."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from mlperf_logging.result_summarizer.result_summarizer import _compute_strong_score_standalone

from recorder.store.reader import read_run
from replay.derive import derive_run
from replay.scorekeeping.olympic import olympic
from tests.replay.runs import record_run

# (evaluations in order) per run: passes at 18, 19, 20, 18 (after an earlier miss), and one aborted run.
SET = [
    [(18, 0.72)],
    [(18, 0.60), (19, 0.71)],
    [(18, 0.6), (19, 0.6), (20, 0.8)],
    [(19, 0.5), (18, 0.70)],
    [(18, 0.5), (19, 0.6), (20, 0.65)],
]


@pytest.fixture(scope="module")
def result_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[float | None]]:
    root = tmp_path_factory.mktemp("runs")
    folder = tmp_path_factory.mktemp("results")
    minutes: list[float | None] = []
    for i, evals in enumerate(SET):
        run = record_run(root, f"r{i}", gbs=256, steps=20, closed=True, evals=evals, eval_start_s=1300)
        d = derive_run(read_run(run).events, "6.1.0", "checker-order")
        (folder / f"result_{i}.txt").write_text(d.text())
        minutes.append(d.minutes if d.status == "success" else None)
    return folder, minutes


def test_olympic_matches_the_summarizers_strong_score(result_dir: tuple[Path, list[float | None]]) -> None:
    folder, minutes = result_dir
    assert minutes[:4] == pytest.approx([18.0, 1142 / 60, 1204 / 60, 18.0]) and minutes[4] is None
    theirs, _, _ = _compute_strong_score_standalone("qwen35_397b_grpo", "test", False, str(folder), "training", "6.1.0")
    ours = olympic(minutes, "qwen35_397b_grpo")
    assert ours.dropped == 1
    assert ours.minutes == theirs
    # by hand: drop the aborted run and the fastest; the slowest stays (one already dropped): (18 + 19.033 + 20.067) / 3
    assert ours.minutes == pytest.approx((18.0 + 1142 / 60 + 1204 / 60) / 3)


def test_too_many_non_converged_runs_give_no_score() -> None:
    result = olympic([10.0, None, None, 12.0], "qwen35_397b_grpo")
    assert result.minutes is None and "too many" in result.note


def test_compute_score_cli_crashes_in_4_1_68(result_dir: tuple[Path, list[float | None]]) -> None:
    """Why replay.scorekeeping.olympic calls `_compute_olympic_average` itself (see its module docstring)."""
    folder, _ = result_dir
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mlperf_logging.result_summarizer.compute_score",
            "--benchmark_folder",
            str(folder),
            "--usage",
            "training",
            "--ruleset",
            "6.1.0",
        ],
        capture_output=True,
        text=True,
        cwd=folder,
    )
    assert out.returncode != 0
    assert "too many values to unpack" in out.stderr


@pytest.mark.parametrize("place", [0, 2, 4])
def test_minutes_that_are_not_a_number_leave_the_run_unscored_wherever_it_sits(place: int) -> None:
    """A NaN run_stop time sorts anywhere: it must be dropped with its reason, never averaged or shown."""
    from replay.checkers.check import CheckResult
    from replay.scorekeeping.set_score import RunOutcome, score_set

    ok = CheckResult("compliance checker", "6.1.0", True, (), "test")
    minutes = [10.0, 11.0, 12.0, 13.0, 14.0]
    minutes[place] = math.nan
    runs = [RunOutcome(f"r{i}", m, "success", ok) for i, m in enumerate(minutes)]
    result = score_set(runs, "qwen35_397b_grpo", "6.1.0", "closed", 1.0)
    dropped = [m for i, m in enumerate(minutes) if i != place]
    assert result.score_minutes == olympic([*dropped, None], "qwen35_397b_grpo").minutes
    assert result.score_minutes is not None and math.isfinite(result.score_minutes)
    assert not result.runs[place].counted
    assert "not a number" in "; ".join(result.runs[place].reasons())
    assert result.to_json()["runs"][place]["minutes"] is None  # NaN is no JSON
    assert olympic(minutes, "qwen35_397b_grpo").minutes == result.olympic_minutes
