"""Killing the evaluator mid-evaluation and running it again: what is missing is evaluated, nothing twice."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from recorder.errors import SegmentError
from recorder.store.reader import read_run
from recorder.verify import verify_run
from tests.evaluator.synth import record_run
from tests.helpers import run_in_process


def _kinds(run: Path) -> list[tuple[str, int | None, str]]:
    try:
        events = read_run(run).events
    except SegmentError:  # read while the writer appends: try again
        return []
    return [(e.kind, e.step, e.segment) for e in events if e.kind.startswith("eval_")]


def test_kill_mid_evaluation_then_rerun(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=20, target=1.0, samples=40).path
    exe = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
    # batch size 1 makes each checkpoint take seconds, so the kill lands inside step 19's evaluation
    proc = subprocess.Popen(
        [exe, "eval", str(run), "--batch-size", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and ("eval_start", 19, "evaluator-0001.arrows") not in _kinds(run):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed = _kinds(run)
    assert ("eval_result", 18, "evaluator-0001.arrows") in killed
    assert not any(k == "eval_result" and s == 19 for k, s, _ in killed)

    again = run_in_process("eval", str(run))
    assert again.returncode == 1, again.stderr  # nothing passes (target 1.0): the data says no
    assert "closed an interrupted evaluation: step 19 (evaluator-0001.arrows)" in again.stdout
    events = [e for e in read_run(run).events if e.kind.startswith("eval_")]
    second = [(e.kind, e.step, e.data.get("error")) for e in events if e.segment == "evaluator-0002.arrows"]
    assert second == [
        ("eval_failed", 19, "EvaluatorInterrupted"),
        ("eval_start", 19, None),
        ("eval_result", 19, None),
        ("eval_stop", 19, None),
        ("eval_start", 20, None),
        ("eval_result", 20, None),
        ("eval_stop", 20, None),
    ]
    assert sorted(e.step for e in events if e.kind == "eval_result") == [18, 19, 20]  # no duplicate
    report = verify_run(run)
    assert report.ok, report.problems
    assert [s.closed for s in report.segments if s.name.startswith("evaluator")] == [False, True]
