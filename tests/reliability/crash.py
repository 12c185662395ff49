"""Kill a real `recorder` subprocess with SIGKILL at a chosen instant, then judge what it left behind.

Evidence that nothing completed was lost comes from the process itself: the trainer prints `step N/..`
after step N's step_metrics append returned, the evaluator prints `step N: accuracy` after its eval_result;
every such line printed before the kill must have its event in the log.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from recorder.store.reader import read_run
from recorder.verify import verify_run
from tests.helpers import run_cli

# A small but complete training run: no warm-up, two new tokens, GBS 256 -> checkpoints at steps 18, 19.
SMALL_TRAIN = ("--set", "warmup.enabled=false", "--set", "max_new_tokens=2", "--set", "eval.samples=64")


def recorder_exe() -> str:
    return shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"


@dataclass(frozen=True)
class Killed:
    delay_s: float
    returncode: int  # -9 when the kill landed; 0/1 when the process finished first
    stdout: str


def run_and_kill(args: list[str], delay_s: float) -> Killed:
    """Start `recorder ARGS` in its own process group and SIGKILL the whole group after `delay_s`."""
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [recorder_exe(), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        proc.wait(timeout=delay_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=60)
    return Killed(delay_s, proc.returncode, out)


def timed(args: list[str]) -> float:
    """Seconds an uninterrupted run takes (the range the kills are drawn from)."""
    t0 = time.perf_counter()
    r = run_cli(*args)
    assert r.returncode in (0, 1), r.stderr
    return time.perf_counter() - t0


def check_after_kill(run: Path, killed: Killed, printed: str, kind: str) -> int:
    """verify passes (torn tails are warnings), every printed step has its event, no checkpoint is
    half-committed. Returns the number of events that survived."""
    if not (run / "events").exists() or not any((run / "events").iterdir()):
        # killed before the run directory or its first segment was made: nothing was recorded, nothing lost
        # (verify then says "no segments: the run has no recorded events", exit 1: true of such a run)
        assert not re.findall(printed, killed.stdout)
        return 0
    report = verify_run(run)
    assert report.ok, f"kill at {killed.delay_s:.2f} s: {[str(p) for p in report.problems]}"
    cli = run_cli("verify", str(run))
    assert cli.returncode == 0 and "verify: intact" in cli.stdout, cli.stdout + cli.stderr
    log = read_run(run)
    recorded = {e.step for e in log.events if e.kind == kind}
    claimed = {int(s) for s in re.findall(printed, killed.stdout)}
    assert claimed <= recorded, (
        f"kill at {killed.delay_s:.2f} s: printed {sorted(claimed)}, recorded {sorted(recorded)}"
    )
    check_checkpoints(run)
    return len(log.events)


def check_checkpoints(run: Path) -> None:
    """Every checkpoint_committed names a complete checkpoint with the recorded sha256; no temporary
    directory is ever referenced by an event."""
    from recorder.checkpoints.recorder_format import file_sha256

    for e in read_run(run).events:
        if e.kind != "checkpoint_committed":
            continue
        rel = e.data["path"]
        assert not Path(rel).name.startswith(".tmp"), f"seq {e.seq} references a temporary directory {rel}"
        path = run / rel
        assert {p.name for p in path.iterdir()} == {"model.safetensors", "config.json", "tokenizer.json"}
        assert file_sha256(path / "model.safetensors") == e.data["sha256"], f"{rel}: sha256 differs"
