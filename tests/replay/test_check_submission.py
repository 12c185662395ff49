"""`recorder check-submission`: the package checker on a copy of the submission (its RCP check rewrites
scaling.json), then every result set imported and scored as the summarizer scores it, in one table."""

from __future__ import annotations

import shutil
from pathlib import Path

from mlperf_logging.result_summarizer.result_summarizer import _compute_strong_score_standalone

from tests.helpers import run_cli

SUBMISSION = "mlperf-results/training_results_v5.0/IBM+CoreWeave+NVIDIA"
SYSTEM, BENCHMARK = "carina_ngpu512_ngc25.04_nemo", "llama31_405b"


def test_check_submission_table(corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "IBM"
    shutil.copytree(corpus / SUBMISSION, folder)
    scaling = folder / "results" / SYSTEM / BENCHMARK / "scaling.json"
    before = scaling.read_bytes()
    result = run_cli("check-submission", str(folder), "--ruleset", "5.0.0", "--root", str(tmp_path / "runs"))
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
