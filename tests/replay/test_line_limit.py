"""A line the compliance checker would choke on (its time grows with the square of a line's length) is
refused before it runs: at derivation (a recorded value that would make a huge line), in the checker's own
input (any log handed to it), and at import."""

from __future__ import annotations

import json
from pathlib import Path

from recorder.store.kinds import StepMetrics
from replay.checkers.check import compliance_lines
from replay.mllog_format import LINE_LIMIT
from tests.helpers import run_cli
from tests.kit.synthetic import record_run


def _metrics(step: int) -> StepMetrics:
    return StepMetrics(loss=0.5, reward=0.25, stats={"note": "x" * (1 << 20)} if step == 5 else {})


def test_a_megabyte_step_metrics_string_never_hangs_replay(tmp_path: Path) -> None:
    run = record_run(tmp_path, "r", gbs=256, steps=20, evals=[(19, 0.72)], closed=True, step_metrics=_metrics).path
    for args in (["replay", str(run)], ["replay", str(run), "--check"], ["score", str(run)]):
        done = run_cli(*args, timeout=120)  # the checker on that line would take most of an hour
        assert done.returncode == 1 and "Traceback" not in done.stderr, (args, done.stdout, done.stderr)
        assert "step 5's tracked_stats line would be" in done.stdout + done.stderr, (args, done.stdout, done.stderr)


def test_the_checker_is_not_run_on_a_log_with_a_line_over_the_limit() -> None:
    doc = {
        "namespace": "",
        "time_ms": 1,
        "event_type": "POINT_IN_TIME",
        "key": "cache_clear",
        "value": "x" * LINE_LIMIT,
    }
    result = compliance_lines([":::MLLOG " + json.dumps(doc)], "6.1.0")
    assert not result.ok and result.error is None
    assert result.reasons == (
        f"line 1 is longer than {LINE_LIMIT:,} bytes: not checked (the compliance checker's time grows with "
        "the square of a line's length)",
    )


def test_import_refuses_a_line_over_the_limit(tmp_path: Path) -> None:
    log = tmp_path / "result_0.txt"
    doc = {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "submission_benchmark"}
    log.write_text(":::MLLOG " + json.dumps({**doc, "value": "y" * LINE_LIMIT}) + "\n")
    done = run_cli("import", str(log), "--root", str(tmp_path / "runs"))
    assert done.returncode == 2 and f"{log} line 1: a ':::MLLOG' line of" in done.stderr, done.stderr
