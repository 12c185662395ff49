"""A 1 GB segment verifies with peak RSS under 1 GB (verify streams)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.helpers import REPO


@pytest.mark.slow
def test_a_1gb_segment_verifies_in_bounded_memory() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "verify.py"), "--mb", "1024"],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert done.returncode == 0, done.stderr
    m = re.search(r"segment (\d+) MiB: .* peak RSS (\d+) MiB", done.stdout)
    assert m is not None, done.stdout
    assert int(m[1]) >= 1024 and int(m[2]) < 1024, done.stdout
