"""Long work shows progress on a terminal (a pseudo-terminal from `script`), and nothing of it on a pipe."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import RECORDER, interrupted_on_terminal, on_terminal, run_cli
from tests.kit.screen import screen
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


def test_the_screen_is_what_the_terminal_shows() -> None:
    assert screen("abc\r\x1b[2Kxy\r\nzz", 80) == ["xy", "zz"]  # a frame erased and drawn again
    assert screen("a" * 80 + "^C\r\x1b[2Kb", 80) == ["a" * 80, "b"]  # the last column written: the next wraps
    assert screen("one\r\ntwo\r\n\x1b[1A\x1b[2K\x1b[1A\x1b[2Kend", 80) == ["end"]  # two lines up, erased


# A bar on stderr, as zero-shot draws its per-checkpoint progress, and results printed on stdout while it runs.
BAR_AND_RESULTS = """
import time
from recorder.cli.terminal.output import console
from recorder.cli.terminal.progress import PerItem
with PerItem("zero-shot") as shown:
    for done in range(3):
        shown.report("run/step_10", "scoring", done, 3)
        time.sleep(0.3)
    console.print("run/step_10: arc_easy 0.5000", soft_wrap=True)
    console.print("checkpoint   step  arc_easy", soft_wrap=True)
    console.print("run/step_10    10    0.5000", soft_wrap=True)
    shown.report("run/step_10", "done", 3, 3)
    time.sleep(0.3)
console.print("wrote /tmp/a results/run_step_10", soft_wrap=True)
"""


def test_what_is_printed_on_stdout_while_a_bar_runs_on_stderr_goes_above_it_and_the_bar_leaves_nothing() -> None:
    command = f"stty cols 80 rows 50; {shlex.join([sys.executable, '-c', BAR_AND_RESULTS])}"
    done = subprocess.run(
        ["script", "-qec", command, "/dev/null"], capture_output=True, env=os.environ | {"COLUMNS": "80"}
    )
    assert done.returncode == 0, done.stdout
    assert screen(done.stdout.decode(), 80) == [
        "run/step_10: arc_easy 0.5000",
        "checkpoint   step  arc_easy",
        "run/step_10    10    0.5000",
        "wrote /tmp/a results/run_step_10",
    ]


# A bar whose line fills an 80-column terminal (a long description), stopped by Ctrl-C.
BAR_THEN_CTRL_C = """
import time
from recorder.cli.terminal.progress import progress
try:
    with progress("import: reading a long list of files, each a run of its own, one after another", 10**6) as advance:
        while True:
            advance(1)
            time.sleep(0.05)
except KeyboardInterrupt:
    print("stopped")
"""


def test_ctrl_c_leaves_nothing_of_a_bar_as_wide_as_the_terminal() -> None:
    code, recording = interrupted_on_terminal(80, "import: reading", sys.executable, "-c", BAR_THEN_CTRL_C)
    assert code == 0, recording[-2000:]
    assert "…" in recording  # the bar was drawn, its description cut to fit the line
    assert screen(recording, 80) == ["stopped"], recording[-2000:]
