"""Two processes writing to the same run (separate segments) lose nothing and read back identically."""

import subprocess
import sys
from pathlib import Path

from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run
from tests.helpers import REPO


def test_two_processes_same_run(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "shared")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.core.appender", str(run.path), w, "2000"], cwd=REPO, stdout=subprocess.DEVNULL
        )
        for w in ("trainer", "evaluator", "trainer")
    ]
    assert [p.wait() for p in procs] == [0, 0, 0]
    names = sorted(p.name for p in run.events.iterdir())
    assert names == ["evaluator-0001.arrows", "trainer-0001.arrows", "trainer-0002.arrows"]
    first = read_run(run.path).events
    assert len(first) == 3 * 2001
    for segment in names:
        seqs = [e.seq for e in first if e.segment == segment]
        assert seqs == list(range(2001))  # each segment complete and in its own order
    for _ in range(3):
        assert read_run(run.path).events == first
    assert verify_run(run).ok
