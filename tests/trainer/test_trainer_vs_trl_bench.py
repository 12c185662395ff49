"""bench/trainer_vs_trl.py at tiny shapes, so the CPU bench cannot rot: both sides taking turns in one
process, and `--alone` (each side in its own process). Not a performance number: only the report's shape and
its arithmetic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
REQUIRED = ("ours_tokens_per_s", "trl_tokens_per_s", "ratio", "ours_peak_rss_mb", "trl_peak_rss_mb", "steps")


def bench(*flags: str) -> tuple[str, dict[str, Any]]:
    pytest.importorskip("trl", reason="the TRL peer needs the trl extra (pip install -e .[trl])")
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "trainer_vs_trl.py"), "--tiny", *flags],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout, json.loads(done.stdout.strip().splitlines()[-1])


def check(summary: dict[str, Any]) -> None:
    assert all(key in summary for key in REQUIRED), summary
    assert summary["ratio"] == pytest.approx(summary["ours_tokens_per_s"] / summary["trl_tokens_per_s"])
    assert summary["steps"] == 1
    assert 0.0 < summary["sampler_overhead"] < 1.0
    assert summary["ours_peak_rss_mb"] > 0 and summary["trl_peak_rss_mb"] > 0


def test_both_sides_in_one_process_end_with_one_summary_json_and_where_each_step_went() -> None:
    out, summary = bench()
    check(summary)
    assert "ratio ours/TRL tokens/s" in out
    assert "wall s per step" in out and summary["kernels"]["aten"]
    for side in ("ours", "trl"):
        phases = summary["phases"][side]
        assert all(phases[p] > 0 for p in ("generation", "decode forward", "forward and loss", "backward", "optimizer"))
        assert phases["decode forward"] <= phases["generation"]
        step_s = summary[f"{side}_s_per_step"]
        assert sum(v for p, v in phases.items() if p != "decode forward") == pytest.approx(step_s)


@pytest.mark.slow  # trains both sides in processes of their own; the default tier keeps the in-process bench test
def test_alone_runs_each_side_in_its_own_process_and_merges_them() -> None:
    out, summary = bench("--alone")
    check(summary)
    assert out.index("-- trl alone") < out.index("-- ours alone") < out.index("alone, each side in its own process")
