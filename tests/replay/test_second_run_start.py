"""An imported log with a second run_start: the compliance checker warns (it requires exactly one), and
that warning is kept wherever its verdict is shown: import's output, replay --check, the scores rows."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import run_cli

LOG = "mlperf-results/training_results_v5.1/Wiwynn/results/1xKinabalux18x4GB200/llama2_70b_lora/result_0.txt"
WARNING = "Required EXACTLY_ONE occurrence of 'run_start' but found 2"


def test_a_second_run_start_keeps_the_checkers_warning(corpus: Path, tmp_path: Path) -> None:
    lines = (corpus / LOG).read_text(encoding="latin-1").splitlines()
    start = next(i for i, ln in enumerate(lines) if '"key": "run_start"' in ln)
    stop = next(i for i, ln in enumerate(lines) if '"key": "run_stop"' in ln)
    late = json.loads(lines[start].split(":::MLLOG ", 1)[1])
    late["time_ms"] = json.loads(lines[stop].split(":::MLLOG ", 1)[1])["time_ms"] - 600  # 0.01 min before stop
    lines.insert(stop, ":::MLLOG " + json.dumps(late))
    log = tmp_path / "result_0.txt"
    log.write_text("\n".join(lines) + "\n")
    imported = run_cli("import", str(log), "--root", str(tmp_path / "runs"))
    assert imported.returncode == 0, imported.stderr
    assert f"a second run_start (the first at line {start + 1})" in imported.stdout, imported.stdout
    (run,) = (tmp_path / "runs").iterdir()
    done = run_cli("replay", str(run), "--check", "--ruleset", "5.1.0")
    assert f"PASSED (warning: {WARNING})" in done.stdout, done.stdout + done.stderr
    rows = [json.loads(r) for r in (run / "derived" / "scores.jsonl").read_text().splitlines()]
    assert any(WARNING in (r["checker"] or "") for r in rows), rows
