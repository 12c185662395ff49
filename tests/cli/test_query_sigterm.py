"""A query killed by SIGTERM (`kill PID`, a scheduler's time limit) dies of SIGTERM as before, and leaves no
spill folder (`recorder-query-*`) in the temporary directory."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.shell import make_root
from tests.helpers import RECORDER


# slow: on a loaded machine the query was once seen to end with exit 2 instead (its stderr is now kept in the
# failure to say why)
@pytest.mark.slow
def test_a_query_killed_by_sigterm_leaves_no_spill_folder(tmp_path: Path) -> None:
    root = make_root(tmp_path / "runs")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    sql = "SELECT count(DISTINCT range) FROM range(1000000000000)"  # hours of work: it is killed first
    proc = subprocess.Popen(
        [RECORDER, "query", "--root", str(root), "--timeout", "0", sql],
        env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(tmp.glob("recorder-query-*")) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert list(tmp.glob("recorder-query-*")), "the query never made its spill folder"
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
        assert code == -signal.SIGTERM, (code, proc.stderr.read().decode() if proc.stderr else "")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert list(tmp.iterdir()) == []
