"""`recorder check-submission`: the package checker on a copy of the submission (its RCP check rewrites
scaling.json), then every result set imported and scored as the summarizer scores it, in one table."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mlperf_logging.result_summarizer.result_summarizer import _compute_strong_score_standalone

from tests.helpers import run_cli, run_in_process

SUBMISSION = "mlperf-results/training_results_v5.0/IBM+CoreWeave+NVIDIA"
SYSTEM, BENCHMARK = "carina_ngpu512_ngc25.04_nemo", "llama31_405b"


def test_check_submission_table(corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "IBM"
    shutil.copytree(corpus / SUBMISSION, folder)
    scaling = folder / "results" / SYSTEM / BENCHMARK / "scaling.json"
    before = scaling.read_bytes()
    result = run_in_process("check-submission", str(folder), "--ruleset", "5.0.0", "--root", str(tmp_path / "runs"))
    out = " ".join(result.stdout.split())
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode in (0, 1), result.stderr
    assert "package checker (mlperf-logging 4.1.68, training 5.0.0): " in out
    theirs, _, factor = _compute_strong_score_standalone(
        BENCHMARK, SYSTEM, False, str(folder / "results" / SYSTEM / BENCHMARK), "training", "5.0.0"
    )
    assert f"│ {SYSTEM} │ {BENCHMARK} │ 3 │ {theirs:.3f} │ {factor:.4f} │ scored" in out, out
    assert scaling.read_bytes() == before  # the checker ran on a copy
    assert len(list((tmp_path / "runs").iterdir())) == 3


def test_a_hostile_submission_names_every_entry_it_refuses_and_reads_none_of_them(corpus: Path, tmp_path: Path) -> None:
    """A FIFO, a symlink to /dev/zero, a folder linked to its parent (a loop) and a sparse 2 GiB file: each
    is named on its own error: line; none is opened (a FIFO would block, /dev/zero never ends)."""
    folder = tmp_path / "hostile"
    shutil.copytree(corpus / SUBMISSION, folder)
    bench = folder / "results" / SYSTEM / BENCHMARK
    os.mkfifo(bench / "result_7.txt")
    (bench / "result_8.txt").symlink_to("/dev/zero")
    (bench / "loop").symlink_to("..")
    with open(bench / "result_9.txt", "wb") as f:
        f.truncate(2 << 30)  # sparse: no disk used, 2 GiB to read
    # a process of its own: a FIFO that were read would hang it, and the timeout ends that
    result = run_cli(
        "check-submission", str(folder), "--ruleset", "5.0.0", "--root", str(tmp_path / "runs"), timeout=120
    )
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 4 and all(line.startswith("error: ") for line in lines), result.stderr
    for name, why in [("result_7.txt", "a FIFO"), ("result_8.txt", "a symlink"), ("loop", "a symlink")]:
        assert any(f"{bench / name}: {why}" in line for line in lines), (name, result.stderr)
    assert any(f"{bench / 'result_9.txt'}: 2,147,483,648 bytes" in line for line in lines), result.stderr
    assert not (tmp_path / "runs").exists()
