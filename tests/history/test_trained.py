"""The views over a real `recorder train` run, checked against its events read directly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from recorder.history.compact import compact_run
from recorder.history.views import open_history
from recorder.store.reader import read_run


@pytest.fixture(scope="module")
def trained_root(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trained-history")
    shutil.copytree(trained_run, root / trained_run.name, ignore=shutil.ignore_patterns("checkpoints"))
    return root


def test_views_match_the_trained_events(trained_root: Path) -> None:
    (run_dir,) = trained_root.iterdir()
    events = read_run(run_dir).events
    opened = next(e for e in events if e.kind == "run_opened").data
    updates = {e.step: e.time_ns for e in events if e.kind == "weight_update"}
    metrics = {e.step: e.data for e in events if e.kind == "step_metrics"}
    commits = {e.step: e.data for e in events if e.kind == "checkpoint_committed"}
    final = next(e for e in events if e.kind == "train_stop")
    with open_history(trained_root) as history:
        (run,) = history.query("SELECT * FROM runs").to_pylist()
        steps = history.query("SELECT * FROM steps ORDER BY step").to_pylist()
        checkpoints = history.query("SELECT * FROM checkpoints ORDER BY step").to_pylist()
    assert (run["benchmark"], run["division"], run["global_batch_size"]) == (
        opened["benchmark"],
        opened["division"],
        opened["global_batch_size"],
    )
    assert (run["steps"], run["train_status"], run["events"]) == (final.step, final.data["status"], len(events))
    assert [s["step"] for s in steps] == sorted(updates)
    assert {s["step"]: s["weight_update_ns"] for s in steps} == updates
    assert {s["step"]: (s["loss"], s["reward"]) for s in steps} == {
        k: (m["loss"], m["reward"]) for k, m in metrics.items()
    }
    assert [c["step"] for c in checkpoints] == sorted(commits)
    for c in checkpoints:
        d = commits[c["step"]]
        assert c["weight_update_ns"] == d["weight_update_ns"] == updates[c["step"]]
        assert c["blocked_s"] == pytest.approx(d["blocked_ns"] / 1e9)
        assert c["background_s"] == pytest.approx((d["save_end_ns"] - d["save_begin_ns"] - d["blocked_ns"]) / 1e9)


def test_compacting_the_trained_run_changes_no_row(trained_root: Path) -> None:
    def everything() -> dict[str, list[dict]]:
        with open_history(trained_root) as history:
            return {
                v: history.query(f"SELECT * FROM {v} ORDER BY ALL").drop(["source"] if v == "runs" else []).to_pylist()
                for v in ("events", "runs", "steps", "checkpoints", "evals")
            }

    before = everything()
    (run_dir,) = trained_root.iterdir()
    assert compact_run(run_dir).status == "compacted"
    assert everything() == before
