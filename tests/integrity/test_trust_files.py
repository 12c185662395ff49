"""A second attacker: `verify --trust FILE` given something that is not a public key.

Each is refused with one line naming the file, exit 2, before any run is judged; none hangs (a FIFO or
/dev/zero is never read) and none reads as "no key given".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.kit.synthetic import record_run


def _trust_file(tmp_path: Path, what: str) -> str:
    path = tmp_path / "key.pub"
    if what == "empty":
        path.write_text("")
    elif what == "directory":
        path.mkdir()
    elif what == "fifo":
        os.mkfifo(path)
    elif what == "device":
        return "/dev/zero"
    elif what == "private key":
        assert run_cli("keygen", "-o", str(tmp_path / "key")).returncode == 0
        return str(tmp_path / "key")
    elif what == "text":
        path.write_text("ssh-ed25519 not-base64 me\n")
    return str(path)


@pytest.mark.parametrize("what", ["empty", "directory", "fifo", "device", "private key", "text"])
def test_a_trust_file_that_is_not_a_public_key_is_refused(tmp_path: Path, what: str) -> None:
    run = record_run(tmp_path / "runs", "r", gbs=256, steps=20, closed=True).path
    trust = _trust_file(tmp_path, what)
    done = run_cli("verify", str(run), "--trust", trust, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and trust in line
    assert ("not a regular file" in line) == (what in ("directory", "fifo", "device"))
