import io
import re
import shutil
import time

import pytest
from rich.console import Console

from recorder.cli.terminal.heartbeat import Heartbeat
from tests.helpers import plain, terminal_recording
from tests.kit.screen import screen
from trainer.loop import StepResult
from trainer.progress import Progress


def _r(step):
    return StepResult(
        step=step,
        loss=0.0,
        reward=0.5,
        grad_norm=1.0,
        tokens=10,
        samples=256,
        generation_s=0.1,
        train_s=0.1,
        refit_s=0.0,
        checkpoint_block_s=0.0,
        step_s=0.25,
        optimizer_done_ns=0,
    )


def test_plain_lines_when_not_a_tty(capsys):
    with Progress(19, 18, tty=False) as p:
        p(_r(17), 0)
        p(_r(19), 2)
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "step 17/19  reward 0.500  0.25 s/step  checkpoints 0  (saving from step 18)",
        "step 19/19  reward 0.500  0.25 s/step  checkpoints 2",
    ]


def test_the_bar_says_a_save_is_under_way_at_its_own_step():
    p = Progress(19, 18, tty=False)
    assert p.saved(18, 0) == "0 saved, saving 18"
    assert p.saved(19, 1) == "1 saved, saving 19"
    assert p.saved(19, 2) == "2 saved"


def test_rich_bar_on_a_tty(capsys):
    with Progress(19, 18, tty=True) as p:
        p(_r(1), 0)
    assert "step 1/19" not in capsys.readouterr().out  # the bar, not plain lines


@pytest.mark.slow  # trains a run on a pseudo-terminal
def test_on_a_terminal_80_columns_wide_the_bar_keeps_the_step_count_and_the_time_whole(tmp_path):
    """A first run's warm-up shows its batch and dev accuracy in the bar, and each step's line keeps `N/19`
    and the elapsed time: the step's details are short enough not to push them out."""
    if shutil.which("script") is None:
        pytest.skip("util-linux `script` is not installed")
    short_warmup = ["--set", f"warmup.cache_dir={tmp_path / 'cache'}", "--set", "warmup.max_batches=12"]
    root = tmp_path / "recorder runs" / ("r" * 80)  # a path with a space, longer than the terminal is wide
    recording = terminal_recording(80, "train", "--root", str(root), "--run-id", "bar", *short_warmup)
    shown = plain(recording)
    assert re.search(r"warm-up batch 10, dev \d\.\d\d of 0\.58 \d:\d\d:\d\d", shown), shown
    for step in (1, 18, 19):
        assert re.search(rf" {step:>2}/19 reward \d\.\d{{3}} .* \d:\d\d:\d\d$", shown, re.M), (step, shown)
    assert "…" not in shown, shown
    # once it ends: the bar is gone, the summary's lines break at spaces, the run's path and the next command
    # each whole on a line of their own
    left = screen(recording, 80)
    assert not [line for line in left if "━" in line or "/19" in line], left
    ended = shown[shown.index("\ntrained 19 steps") + 1 :].splitlines()
    assert ended[1:] == ["run:", str(root / "bar"), "next:", f"recorder eval {root / 'bar'}"], shown
    assert len(ended[0]) <= 80, shown


def test_a_heartbeat_says_what_the_command_is_at(tmp_path):
    out = io.StringIO()
    status = "warming up: batch 20, dev pass@4 0.10 (stops at 0.58)"

    def printed(text: str) -> bool:  # waits for the beat however loaded the machine is (up to a minute)
        deadline = time.monotonic() + 60
        while text not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        return text in out.getvalue()

    with Heartbeat(Console(file=out, width=200), interval_s=0.05) as beat:
        assert printed("train: still starting (")
        beat.status = status
        assert printed(f"train: {status} (")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("train: still starting (")
    assert lines[-1].startswith(f"train: {status} (")
