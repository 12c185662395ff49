"""A run judged or evaluated otherwise than the benchmark is NOT COMPARABLE in every command's output; its
derived mllog, which the compliance checker passes since the checker sees only the accuracies, says so too,
outside the tool: in its name and in its first line, which the checker skips."""

from __future__ import annotations

import json
from pathlib import Path

from recorder.verify import verify_run
from replay.checkers.check import compliance_file
from tests.helpers import run_cli
from tests.kit.synthetic import record_run


def _weak_run(tmp_path: Path) -> Path:
    """Judged by its own pass target (0.7), as `recorder train --set eval.target=0.7` records it: every
    accuracy it logs is above the ruleset's 0.69 too, so the checker passes its derived log."""
    run = record_run(tmp_path, "weak", gbs=256, steps=20, closed=True, target=0.7, evals=[(18, 0.75), (19, 0.8)]).path
    assert verify_run(run).ok  # an honest run could have been configured so
    return run


def test_the_derived_mllog_of_a_run_that_is_not_comparable_says_so(tmp_path: Path) -> None:
    run = _weak_run(tmp_path)
    done = run_cli("replay", str(run), "--check")
    said = " ".join((done.stdout + done.stderr).split())
    assert "NOT COMPARABLE" in said and "pass target is 0.7" in said, said
    derived = run / "derived"
    logs = sorted(p.name for p in derived.glob("result_*"))
    assert logs == ["result_official.NOT_COMPARABLE.txt"], logs
    log = derived / logs[0]
    first = log.read_text().splitlines()[0]
    assert first.startswith("NOT COMPARABLE: ") and "pass target is 0.7" in first and ":::MLLOG" not in first, first
    assert f"-> {log}" in said, said
    # the checker skips the line and passes the log, as the command said: the mark is what tells
    assert compliance_file(log, "6.1.0").ok and "PASSED" in said, said
    rows = [json.loads(ln) for ln in (derived / "scores.jsonl").read_text().splitlines()]
    assert rows and all("NOT COMPARABLE" in r["why"] for r in rows)


def test_a_comparable_runs_mllog_keeps_its_plain_name(tmp_path: Path) -> None:
    run = record_run(tmp_path, "fair", gbs=256, steps=20, closed=True, target=0.69, evals=[(18, 0.6), (19, 0.75)]).path
    done = run_cli("replay", str(run))
    assert done.returncode == 0 and "NOT COMPARABLE" not in done.stdout + done.stderr, done.stdout + done.stderr
    log = run / "derived" / "result_official.txt"
    assert log.read_text().startswith(":::MLLOG"), log.read_text()[:200]


def test_an_output_file_of_a_run_that_is_not_comparable_says_so(tmp_path: Path) -> None:
    run = _weak_run(tmp_path)
    out = tmp_path / "out" / "result_0.txt"
    out.parent.mkdir()
    done = run_cli("replay", str(run), "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert out.read_text().startswith("NOT COMPARABLE: "), out.read_text()[:200]
