"""A second attacker: an imported mllog's values are data, never a score by accident.

An `eval_accuracy` that is no finite number (NaN, an infinity, `1e400`, an integer of 400 digits) is kept as
the log's line (the evidence) but never recorded as a score: `recorder.rules.finite_score` is the one rule,
used by the import and by replay's timeline (for runs imported before, or rechained by hand). Before, a
400-digit integer was recorded and `replay` and `report` ended in an OverflowError traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorder.rules import finite_score
from recorder.store.reader import read_segment
from tests.helpers import run_cli
from tests.integrity.forge import rewrite


def _line(t: int, key: str, value: object, meta: dict[str, object] | None = None, kind: str = "POINT_IN_TIME") -> str:
    record = {"namespace": "", "time_ms": t, "event_type": kind, "key": key, "value": value}
    return ":::MLLOG " + json.dumps({**record, "metadata": {"file": "x.py", "lineno": 1, **(meta or {})}})


def _log(tmp_path: Path, accuracy: str) -> Path:
    """A small qwen35_397b_grpo log whose step-19 eval_accuracy is the raw JSON text `accuracy`."""
    lines = [
        _line(1000, "submission_benchmark", "qwen35_397b_grpo"),
        _line(1000, "submission_division", "closed"),
        _line(1000, "global_batch_size", 256),
        _line(1000, "init_start", None, kind="INTERVAL_START"),
        _line(2000, "init_stop", None, kind="INTERVAL_END"),
        _line(2000, "run_start", None, kind="INTERVAL_START"),
        _line(3000, "eval_accuracy", 0.5, {"epoch_num": 18, "samples_count": 18 * 256}),
        _line(63000, "eval_accuracy", "ACCURACY", {"epoch_num": 19, "samples_count": 19 * 256}),
        _line(200000, "run_stop", None, {"status": "success"}, kind="INTERVAL_END"),
    ]
    path = tmp_path / "result_0.txt"
    path.write_text("\n".join(lines).replace('"ACCURACY"', accuracy) + "\n")
    return path


def _import(tmp_path: Path, accuracy: str) -> tuple[Path, str]:
    """The imported run, and what import printed."""
    done = run_cli("import", str(_log(tmp_path, accuracy)), "--root", str(tmp_path / "runs"), "--run-id", "r")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return tmp_path / "runs" / "r", done.stdout + done.stderr


@pytest.mark.parametrize("accuracy", ["NaN", "1e400", "1" + "0" * 400])
def test_an_accuracy_that_is_no_finite_number_is_kept_as_a_line_but_never_a_score(
    tmp_path: Path, accuracy: str
) -> None:
    run, said = _import(tmp_path, accuracy)
    assert "result_0.txt:8: eval_accuracy is not a finite number" in said
    events = read_segment(run / "events" / "import-0001.arrows").events()
    assert [e.step for e in events if e.kind == "eval_result"] == [18]
    assert sum(e.kind == "mllog_line" for e in events) == 9  # the log itself is kept whole
    if accuracy.startswith("1" + "0" * 10):  # the one that was recorded before, and crashed replay and report
        for command in (
            ["verify", str(run)],
            ["replay", str(run)],
            ["report", str(run), "-o", str(tmp_path / "r.html")],
        ):
            shown = run_cli(*command)
            assert shown.returncode in (0, 1) and "Traceback" not in shown.stderr, (command, shown.stderr)


def test_a_rechained_score_that_is_no_finite_number_is_no_traceback(tmp_path: Path) -> None:
    run, _ = _import(tmp_path, "0.72")

    def huge(events: list[dict[str, object]]) -> list[dict[str, object]]:
        for e in events:
            if e["kind"] == "eval_result" and e["step"] == 19:
                e["value"] = 10**400
        return events

    rewrite(run / "events" / "import-0001.arrows", huge)
    for command in (["replay", str(run)], ["report", str(run), "-o", str(tmp_path / "r.html")]):
        shown = run_cli(*command)  # before: OverflowError (int too large to convert to float)
        assert shown.returncode in (0, 1) and "Traceback" not in shown.stderr, (command, shown.stderr)


def test_finite_score_is_the_rule() -> None:
    assert finite_score(0.72) == 0.72 and finite_score(1) == 1.0 and finite_score(-0.0) == 0.0
    for no in (float("nan"), float("inf"), float("-inf"), 10**400, True, "0.9", None):
        assert finite_score(no) is None
