"""Helpers shared by tests (not fixtures)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDER = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run `recorder ARGS...` in a subprocess, as a user would."""
    return subprocess.run([RECORDER, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def on_terminal(columns: int, *args: str) -> str:
    """What `recorder ARGS` draws on a pseudo-terminal `columns` wide (util-linux `script`), as plain text:
    escape sequences left out, each carriage return a line break (so a progress frame is a line of its own).
    Callers skip where `script` is missing."""
    command = f"stty cols {columns} rows 200; {shlex.join([RECORDER, *args])}"
    done = subprocess.run(
        ["script", "-qc", command, "/dev/null"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": str(columns)},
        timeout=600,
    )
    text = ANSI.sub("", done.stdout).replace("\r\n", "\n").replace("\r", "\n")
    assert "Traceback" not in text, text
    return text
