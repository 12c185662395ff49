"""Through a pipe, output never depends on the terminal's width. From a folder whose
path is over 150 characters, with COLUMNS unset and COLUMNS=40, no path or run id is split."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.shell import run_process
from tests.history.conftest import record_evaluation
from tests.kit.synthetic import record_worked_example

RUN_ID = "20261130-114405-demo-run-with-a-long-id"


@pytest.fixture(scope="module")
def deep_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("pipe")
    root = base / ("a-folder-with-a-long-name-" * 6) / "runs"
    assert len(str(root)) > 150
    run = record_worked_example(root, RUN_ID)
    record_evaluation(run, [(19, 0.72), (18, 0.70), (20, 0.71)])
    return root


@pytest.mark.parametrize("columns", [None, "40"], ids=["COLUMNS unset", "COLUMNS=40"])
def test_paths_and_run_ids_reach_a_pipe_whole(deep_root: Path, columns: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    run = deep_root / RUN_ID
    replay = run_process("replay", str(run), env=env)
    assert replay.code == 0, replay.err
    assert f"-> {run / 'derived' / 'result_official.txt'}" in replay.out
    runs = run_process("runs", "--root", str(deep_root), env=env)
    assert any(RUN_ID in line and "success" in line for line in runs.out.splitlines()), runs.out
    query = run_process("query", "--root", str(deep_root), "SELECT run_id, path FROM runs", env=env)
    assert any(RUN_ID in line and str(run) in line for line in query.out.splitlines()), query.out
    score = run_process("score", str(run), env=env)
    assert any(line.count(RUN_ID) == 1 for line in score.out.splitlines()), score.out
