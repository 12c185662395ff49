"""Crash safety: a writer killed with SIGKILL at a random instant loses nothing whose append returned."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.store.segment import list_segments
from recorder.verify import verify_run
from tests.helpers import REPO, run_cli


def _spawn(run: Path, writer: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.core.appender", str(run), writer, str(count)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )


# A trial spawns a Python writer (about 1 s on 2 cores): the default tier kills 10, the slow tier 50.
@pytest.mark.parametrize("trials", [10, pytest.param(50, marks=pytest.mark.slow)])
def test_sigkill_at_random_instants_loses_no_returned_append(tmp_path: Path, trials: int) -> None:
    rng = random.Random(1234)
    torn_seen = 0
    for trial in range(trials):
        run = RunDir.create(tmp_path, f"crash-{trial}")
        proc = _spawn(run.path, "trainer", 100_000)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0, 0.05))
        os.kill(proc.pid, signal.SIGKILL)
        printed = [line.strip() for line in proc.stdout]
        proc.wait()
        acknowledged = {int(s) for s in printed if s.isdigit()}
        log = read_run(run.path)
        recorded = {e.seq: e for e in log.events}
        assert acknowledged <= set(recorded), f"trial {trial}: lost {sorted(acknowledged - set(recorded))[:5]}"
        for seq in acknowledged:
            assert recorded[seq].step == seq and recorded[seq].data["i"] == seq
        report = verify_run(run)
        assert report.ok, f"trial {trial}: {report.problems}"
        torn_seen += bool(log.torn)
    assert torn_seen <= trials  # torn tails are allowed; their reporting is tested below


# Every 7th byte reaches every message and its header (slow tier); every 29th, a different byte of each
# message in the default tier, in a quarter of the time.
@pytest.mark.parametrize("stride", [29, pytest.param(7, marks=pytest.mark.slow)])
def test_torn_tail_at_every_offset_is_reported_not_fatal(tmp_path: Path, stride: int) -> None:
    """A power loss can cut a segment anywhere: complete events survive, the tail is a warning."""
    run = RunDir.create(tmp_path, "full")
    proc = _spawn(run.path, "trainer", 12)
    proc.communicate()
    segment = list_segments(run.events)[0]
    data = segment.read_bytes()
    complete = read_run(run.path).segments[0].offsets
    for cut in range(0, len(data) - 8, stride):
        cut_run = RunDir.create(tmp_path, f"cut-{cut}")
        (cut_run.events / segment.name).write_bytes(data[:cut])
        log = read_run(cut_run.path)
        whole = sum(1 for end in complete[1:] if end <= cut)
        assert len(log.events) == whole
        report = verify_run(cut_run)
        assert report.ok, (cut, report.problems)
        last_complete = max((end for end in complete if end <= cut), default=0)
        if cut != last_complete:
            [torn] = log.torn
            assert (torn.offset, torn.bytes_lost) == (last_complete, cut - last_complete)
    cut = (complete[3] + complete[4]) // 2
    (RunDir.create(tmp_path, "cli").events / segment.name).write_bytes(data[:cut])
    out = run_cli("verify", str(tmp_path / "cli"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"torn tail at byte {complete[3]}" in out.stderr and "verify: intact" in out.stdout
