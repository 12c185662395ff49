"""Small real runs for `recorder report`'s tests: converged, failed, aborted and resumed, recorded through
the real log writer (the worked example of docs/design.md section 5, evaluated in different ways)."""

from __future__ import annotations

from pathlib import Path

from recorder.store.log import LogWriter
from recorder.store.run import RunDir
from tests.history.conftest import T0, record_evaluation
from tests.kit.synthetic import S, record_worked_example

GBS = 256


def converged(root: Path) -> RunDir:
    """Evaluated 19, 18, 20 (0.72, 0.70, 0.71): official passes at step 19, 19.033 minutes."""
    run = record_worked_example(root, "converged")
    record_evaluation(run, [(19, 0.72), (18, 0.70), (20, 0.71)])
    return run


def failed(root: Path) -> RunDir:
    """Every checkpoint evaluated, none above the target: run_stop is aborted."""
    run = record_worked_example(root, "failed")
    record_evaluation(run, [(18, 0.61), (19, 0.66), (20, 0.68)])
    return run


def aborted(root: Path, run_id: str = "aborted", target: float | None = None) -> RunDir:
    """Training interrupted at step 7, before the validation start: no checkpoint, nothing to evaluate.
    `target`: a pass target the run records (another than the ruleset's makes it not comparable)."""
    run = RunDir.create(root, run_id)
    with LogWriter(run, "trainer", clock=lambda: T0) as w:
        w.append(
            "run_opened",
            data={
                "benchmark": "qwen35_397b_grpo",
                "ruleset": "6.1.0",
                "division": "open",
                "global_batch_size": GBS,
                "config": {},
                "provenance": {},
                "resumed_from": None,
            }
            | ({"target": target} if target is not None else {}),
        )
        w.append("init_start", time_ns=T0 - 10 * S)
        w.append("init_stop", time_ns=T0)
        w.append("run_start", time_ns=T0)
        for step in range(1, 8):
            w.append("weight_update", step=step, samples_count=step * GBS, time_ns=T0 + 60 * step * S)
            w.append(
                "step_metrics",
                step=step,
                samples_count=step * GBS,
                time_ns=T0 + (60 * step + 1) * S,
                data={"reward": 0.1 * step},
            )
        w.append(
            "train_stop",
            step=7,
            samples_count=7 * GBS,
            time_ns=T0 + 430 * S,
            data={"status": "interrupted", "reason": "interrupted by the user (SIGINT)"},
        )
    return run


def resumed(root: Path) -> RunDir:
    """The converged run with a second trainer session that says it resumed from step 18's checkpoint."""
    run = converged_named(root, "resumed")
    with LogWriter(run, "trainer", clock=lambda: T0 + 2000 * S) as w:
        w.append(
            "run_opened",
            data={
                "benchmark": "qwen35_397b_grpo",
                "ruleset": "6.1.0",
                "division": "open",
                "global_batch_size": GBS,
                "config": {},
                "provenance": {},
                "resumed_from": "resumed",
                "resumed_at_step": 18,
                "resumed_checkpoint": "checkpoints/step_0000018",
            },
        )
    return run


def converged_named(root: Path, run_id: str) -> RunDir:
    run = record_worked_example(root, run_id)
    record_evaluation(run, [(19, 0.72), (18, 0.70), (20, 0.71)])
    return run
