"""`recorder train` talks at once, and Ctrl-C says where it stopped and how to go on (exit 130)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import RECORDER, interrupted_on_terminal
from tests.kit.screen import screen

pytest.importorskip("torch")

QUICK = ["--set", "warmup.enabled=false"]  # the default run, GBS 256: checkpoints from step 18


def _train(root: Path, *extra: str) -> subprocess.Popen[str]:
    exe = Path(sys.executable).parent / "recorder"
    return subprocess.Popen(
        [str(exe), "train", "--root", str(root), "--run-id", "sig", *QUICK, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's Ctrl-C finds it
    )


def _interrupt_after(p: subprocess.Popen[str], line_start: str) -> tuple[str, str]:
    assert p.stderr is not None and p.stdout is not None
    first = p.stderr.readline()
    assert first.startswith("train: starting"), first  # before torch loads, so within moments of the start
    seen = []
    for line in p.stdout:
        seen.append(line)
        if line.startswith(line_start):
            break
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    return "".join(seen) + out, err


@pytest.mark.slow  # torch, a model and a first step: minutes on a loaded 2-core machine
def test_ctrl_c_before_the_first_checkpoint(tmp_path: Path) -> None:
    small = ["--set", "num_prompts_per_step=4", "--set", "num_generations_per_prompt=4", "--set", "micro_batch_size=16"]
    p = _train(tmp_path, *small)  # GBS 16: the first checkpoint would be step 243, far away
    out, err = _interrupt_after(p, "step 1/")
    assert p.returncode == 130, err
    assert "interrupted at step" in err and "before the first checkpoint" in err
    assert "Traceback" not in out + err
    stops = _train_stops(tmp_path / "sig")
    assert stops == ["interrupted"]


@pytest.mark.slow
def test_ctrl_c_after_a_checkpoint_says_how_to_resume(tmp_path: Path) -> None:
    p = _train(tmp_path, "--set", "checkpoint.sync=true")
    out, err = _interrupt_after(p, "step 18/")  # step 18's checkpoint is committed (sync)
    assert p.returncode == 130, err
    assert f"resume with: recorder train --resume {tmp_path / 'sig'}" in err


def _train_stops(run: Path) -> list[str]:
    from recorder.store.reader import read_run

    return [json.loads(e.data_json)["status"] for e in read_run(run).events if e.kind == "train_stop"]


def _nproc_interrupted(root: Path, after_s: float | None) -> tuple[int, str, str]:
    """`recorder train --nproc 2`, Ctrl-C as a terminal sends it (to the whole foreground process group)
    `after_s` seconds after the start, or once the first step is printed (None)."""
    import os
    import time

    exe = Path(sys.executable).parent / "recorder"
    p = subprocess.Popen(
        [str(exe), "train", "--nproc", "2", "--root", str(root), "--run-id", "dp", *QUICK],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a shell's foreground job: the signal goes to every process
    )
    assert p.stdout is not None
    if after_s is None:
        for line in p.stdout:
            if line.startswith("step 1/"):
                break
    else:
        time.sleep(after_s)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=600)
    return p.returncode, out, err


@pytest.mark.slow  # torchrun, two ranks, torch in each: about a minute a case on a loaded 2-core machine
@pytest.mark.parametrize("after_s", [0.5, 2.0, 5.0, None], ids=["0.5s", "2s", "5s", "after step 1"])
def test_ctrl_c_under_nproc_is_one_line_and_exit_130(tmp_path: Path, after_s: float | None) -> None:
    code, out, err = _nproc_interrupted(tmp_path, after_s)
    assert code == 130, out + err
    for noise in ("Traceback", "Fatal Python error", "SignalException", "closing signal", "death signal"):
        assert noise not in out + err, err
    said = [line for line in err.splitlines() if "interrupted" in line]
    assert len(said) == 1, err
    if after_s is None:
        assert said[0].startswith("interrupted at step") and _train_stops(tmp_path / "dp") == ["interrupted"]


def _committed(run: Path) -> bool:
    from recorder.store.reader import read_run

    try:
        return any(e.kind == "checkpoint_committed" for e in read_run(run).events)
    except Exception:  # the run's folder or first segment is still being made
        return False


@pytest.mark.slow  # torchrun, two ranks to the first checkpoint, then the printed command: minutes here
@pytest.mark.parametrize("fmt", ["safetensors", "dcp"])
def test_ctrl_c_under_nproc_after_a_checkpoint_prints_a_resume_command_only_where_it_works(
    tmp_path: Path, fmt: str
) -> None:
    import os
    import re
    import shlex

    exe = Path(sys.executable).parent / "recorder"
    run = tmp_path / "dp"
    options = ["--set", "max_steps=21", "--set", f"checkpoint.format={fmt}", "--set", "checkpoint.sync=true"]
    p = subprocess.Popen(
        [str(exe), "train", "--nproc", "2", "--root", str(tmp_path), "--run-id", "dp", *QUICK, *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a shell's foreground job: the signal goes to every process
    )
    assert p.stdout is not None
    for line in p.stdout:  # a step line counts the checkpoints committed; the run's events must hold one too
        if (m := re.search(r"checkpoints (\d+)", line)) and int(m.group(1)) >= 1 and _committed(run):
            break
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 130, err
    (said,) = [line for line in err.splitlines() if "interrupted" in line]
    hint = re.search(r"with: (recorder train .*)$", said)
    if fmt == "dcp":  # sharded checkpoints: no command is given, since none would resume it
        assert hint is None and "cannot be resumed" in said and f"recorder eval {run}" in said, said
        refused = subprocess.run([str(exe), "train", "--resume", str(run)], capture_output=True, text=True)
        assert refused.returncode == 2 and "not resumed" in refused.stderr, refused.stderr
        return
    assert hint is not None, said
    command = shlex.split(hint.group(1))
    resumed = subprocess.run([str(exe), *command[1:]], capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _train_stops(run)[-1] == "completed"


@pytest.mark.slow  # torch, a model and a first step on a pseudo-terminal
def test_ctrl_c_on_a_terminal_80_columns_wide_leaves_no_bar(tmp_path: Path) -> None:
    """The terminal echoes `^C` at the end of the bar's line; the bar is erased all the same, and where the
    run stopped is said on lines of its own."""
    small = ["--set", "num_prompts_per_step=4", "--set", "num_generations_per_prompt=4", "--set", "micro_batch_size=16"]
    args = ["train", "--root", str(tmp_path), "--run-id", "sig", *QUICK, *small]
    code, recording = interrupted_on_terminal(80, "/244 reward", RECORDER, *args)  # once step 1 is drawn
    shown = screen(recording, 80)
    assert code == 130, shown
    assert shown[0].startswith("train: starting"), shown
    assert not [line for line in shown if "━" in line or "/244" in line], shown
    started = next(i for i, line in enumerate(shown) if line.endswith("two minutes)"))  # wrapped at a space
    assert shown[started + 1].startswith("interrupted at step "), shown
    assert "before the first checkpoint" in shown[started + 1], shown
