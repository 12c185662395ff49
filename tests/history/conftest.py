"""A root holding the runs the history must answer for: trained and evaluated (docs/design.md section 5's
worked example), trained but still live, imported (a real reference log), and a damaged one."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from recorder.store.log import LogWriter
from recorder.store.reader import recorded_run_id
from recorder.store.run import RunDir
from tests.kit.synthetic import S, record_worked_example, write_evidence

T0 = 1_780_000_000 * S
RCP_LOG = "qwen35_397b_grpo_rcp/GBS256/seed_1.out"

# docs/design.md section 5: the worked example's scores, as replay writes them.
WORKED_SCORES = [
    ("official", 19, 1142, 19.033),
    ("earliest-passing", 18, 1080, 18.0),
    ("include-final-save", 19, 1172, 19.533),
    ("zero-save-cost", 19, 1140, 19.0),
    ("inline-eval", 18, 1140, 19.0),
    ("checker-order", 18, 1080, 18.0),
]


def record_evaluation(run: RunDir, order: list[tuple[int, float]], start_s: int = 1300) -> None:
    """An evaluator session: each checkpoint for 60 s from `start_s` after run_start, in the given order."""
    t = T0 + start_s * S
    with LogWriter(run, "evaluator", clock=lambda: t) as w:
        for i, (step, accuracy) in enumerate(order):
            rel, sha = write_evidence(run, w.run_id, step, accuracy, f"{w.segment}-{i}")
            w.append(
                "eval_start",
                step=step,
                samples_count=step * 256,
                time_ns=t,
                data={"checkpoint": f"checkpoints/step_{step:07d}", "sha256": "", "worker": "w0"},
            )
            w.append(
                "eval_result",
                step=step,
                samples_count=step * 256,
                key="accuracy",
                value=accuracy,
                time_ns=t + 60 * S,
                data={"metric": "pass@4", "n": 251, "k": 4, "target": 0.69, "results": rel, "results_sha256": sha},
            )
            w.append("eval_stop", step=step, samples_count=step * 256, time_ns=t + 60 * S)
            t += 60 * S


def write_scores(
    run: RunDir, rows: list[tuple[str, int | None, int | None, float | None]], status: str = "success"
) -> None:
    """derived/scores.jsonl in replay's format (replay.scorekeeping.scores.write_scores writes the real one)."""
    run.derived.mkdir(exist_ok=True)
    lines = [
        json.dumps(
            {
                "run_id": recorded_run_id(run),
                "ruleset": "6.1.0",
                "interpretation": name,
                "status": status,
                "passing_step": step,
                "run_start_ns": T0,
                "run_stop_ns": None if stop is None else T0 + stop * S,
                "minutes": minutes,
                "checker": "ok",
                "mlperf_logging_version": "4.1.68",
            }
        )
        for name, step, stop, minutes in rows
    ]
    (run.derived / "scores.jsonl").write_text("\n".join(lines) + "\n")


def import_log(root: Path, log: Path, run_id: str) -> RunDir:
    """The real importer and the real scores replay writes for it (as-recorded is the one that derives)."""
    from recorder.adapters.mllog_import import import_file
    from replay.scorekeeping.scores import write_scores as replay_write_scores

    run = import_file(log, root, run_id).run
    replay_write_scores(run.path)
    return run


@pytest.fixture(scope="session")
def history_root(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("history")
    trained = record_worked_example(root, "worked")
    record_evaluation(trained, [(19, 0.72), (18, 0.70), (20, 0.71)])
    write_scores(trained, WORKED_SCORES)
    live = record_worked_example(root, "live", t0_ns=T0 + 5000 * S)
    writer = LogWriter(live, "evaluator", clock=lambda: T0 + 6300 * S)  # left open: the run is live
    writer.append("eval_start", step=18, samples_count=18 * 256, data={"checkpoint": "", "sha256": "", "worker": "w1"})
    import_log(root, corpus / RCP_LOG, "rcp-gbs256-seed1")
    damaged = record_worked_example(root, "damaged")
    segment = next(damaged.events.iterdir())
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    yield root
    writer.close()


@pytest.fixture()
def fresh_root(tmp_path: Path, history_root: Path) -> Path:
    """A private copy of the shared root, for tests that compact or change it."""
    root = tmp_path / "root"
    shutil.copytree(history_root, root)
    return root
