"""`derived/scores.jsonl`: every interpretation's result for one run, for the history views.

One JSON object a line: run_id, ruleset, interpretation, status (success | aborted | none), passing_step,
run_start_ns, run_stop_ns, minutes, checker (the compliance checker's verdict, or null), mlperf_logging_version,
and why (the interpretation's reason, or why nothing was derived).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from recorder.events import Event
from recorder.reader import read_run
from recorder.run import RunDir
from replay.check import compliance, mlperf_logging_version
from replay.derive import Derivation, derive_run
from replay.errors import ReplayError
from replay.interpretations import INTERPRETATIONS

SCORES_FILE = "scores.jsonl"


def score_row(
    events: list[Event], run_id: str, ruleset: str, interpretation: str, check: bool = True
) -> dict[str, Any]:
    """One interpretation's row; an interpretation that derives nothing gives status 'none' and says why."""
    try:
        d: Derivation = derive_run(events, ruleset, interpretation)
    except ReplayError as e:
        return {
            "run_id": run_id,
            "ruleset": ruleset,
            "interpretation": interpretation,
            "status": "none",
            "passing_step": None,
            "run_start_ns": None,
            "run_stop_ns": None,
            "minutes": None,
            "checker": None,
            "mlperf_logging_version": mlperf_logging_version(),
            "why": str(e),
        }
    checker = compliance(d.text(), ruleset).summary() if check else None
    return {
        "run_id": run_id,
        "ruleset": ruleset,
        "interpretation": interpretation,
        "status": d.status,
        "passing_step": d.passing_step,
        "run_start_ns": d.run_start_ns,
        "run_stop_ns": d.run_stop_ns,
        "minutes": d.minutes,
        "checker": checker,
        "mlperf_logging_version": mlperf_logging_version(),
        "why": d.why,
    }


def compute_scores(run_dir: Path | str | RunDir, ruleset: str = "6.1.0", check: bool = True) -> list[dict[str, Any]]:
    log = read_run(run_dir)
    return [score_row(log.events, log.run.run_id, ruleset, name, check) for name in INTERPRETATIONS]


def write_rows(run: RunDir, rows: list[dict[str, Any]]) -> Path:
    """Rewrite derived/scores.jsonl atomically (temporary file, fsync, rename)."""
    run.derived.mkdir(exist_ok=True)
    path = run.derived / SCORES_FILE
    tmp = path.with_name(f".{SCORES_FILE}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def write_scores(run_dir: Path | str | RunDir, ruleset: str = "6.1.0", check: bool = True) -> Path:
    """Compute every interpretation of a run and write `<run>/derived/scores.jsonl`; returns its path."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    return write_rows(run, compute_scores(run, ruleset, check))
