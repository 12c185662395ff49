"""Long work shows progress on a terminal (a pseudo-terminal from `script`), and nothing of it on a pipe."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import RECORDER, on_terminal, run_cli
from tests.kit.synthetic import record_run

pytestmark = pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux `script`")
LOG = "mlperf-results/training/small_llm_moe_pretraining/primus/rcp_logs/gbs64/run_0.log"  # 4,600 lines


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_run(
        tmp_path_factory.mktemp("progress") / "runs", "p", gbs=256, steps=400, evals=[(19, 0.72)], closed=True
    ).path


def _raw_terminal(*args: str) -> str:
    """Everything drawn on the terminal, progress frames included (they are erased when the work ends)."""
    # a wide terminal whatever COLUMNS the tests run under: the assertions read the progress line's words
    env = os.environ | {"COLUMNS": "160"}
    done = subprocess.run(
        ["script", "-qc", " ".join([RECORDER, *args]), "/dev/null"], capture_output=True, text=True, env=env
    )
    return done.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["verify"], "verify: reading"),
        (["replay"], "replay: verifying and reading"),
        (["replay", "--check"], "checkers"),
    ],
)
def test_verify_and_replay_show_what_they_do_on_a_terminal_only(run: Path, args: list[str], said: str) -> None:
    command = [args[0], str(run), *args[1:]]
    assert said in _raw_terminal(*command)
    piped = run_cli(*command)
    assert said not in piped.stdout + piped.stderr and "\x1b" not in piped.stdout + piped.stderr


def test_import_and_runs_show_progress_on_a_terminal_only(corpus: Path, tmp_path: Path) -> None:
    drawn = _raw_terminal("import", str(corpus / LOG), "--root", str(tmp_path / "a"))
    assert "import: 1 file(s)" in drawn
    piped = run_cli("import", str(corpus / LOG), "--root", str(tmp_path / "b"))
    assert piped.returncode == 0 and "import: 1 file" not in piped.stdout + piped.stderr
    assert "runs: reading the runs" in _raw_terminal("runs", "--root", str(tmp_path / "a"))
    assert "runs: reading" not in run_cli("runs", "--root", str(tmp_path / "a")).stderr
    assert on_terminal(80, "runs", "--root", str(tmp_path / "a")).count("run_0") >= 1
