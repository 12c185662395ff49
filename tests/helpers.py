"""Helpers shared by tests (not fixtures)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run `recorder ARGS...` in a subprocess, as a user would."""
    exe = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
    return subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)
