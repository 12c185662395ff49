"""Helpers for the command-line tests: a small root of runs, the CLI in-process and as a subprocess, hashes."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import signal
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from recorder.store.run import RunDir
from tests.history.conftest import record_evaluation
from tests.kit.synthetic import record_run, record_worked_example


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def make_root(root: Path) -> Path:
    """The worked example, evaluated (19, 18, 20: official passes at 19), and a run killed at step 2."""
    worked = record_worked_example(root, "worked")
    record_evaluation(worked, [(19, 0.72), (18, 0.70), (20, 0.71)])
    record_run(root, "killed", gbs=256, steps=2, stop_status="failed", last_metrics_s=120)  # died at step 2
    return root


def run_main(*args: str) -> Result:
    """`recorder ARGS` in this process through the real entry point (main(): typer, error mapping)."""
    from recorder.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["recorder", *args]
    # main() ignores SIGINT on its way out (a process that is ending); this process goes on, and the processes
    # it starts later must find Ctrl-C as it was
    sigint = signal.getsignal(signal.SIGINT)
    code = 0
    try:
        with redirect_stdout(out), redirect_stderr(err):
            main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
        signal.signal(signal.SIGINT, sigint)
    return Result(code, out.getvalue(), err.getvalue())


def run_process(*args: str, env: dict[str, str] | None = None, timeout: float = 300, cwd: Path | None = None) -> Result:
    """`recorder ARGS` as a user runs it: a subprocess, stdout and stderr through pipes."""
    exe = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
    p = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    return Result(p.returncode, p.stdout, p.stderr)


def tree_hashes(*folders: Path) -> dict[str, str]:
    """Every entry under the folders: its path and the SHA-256 of its bytes (or its kind)."""
    hashes: dict[str, str] = {}
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in dirnames:
                hashes[os.path.join(dirpath, name)] = "dir"
            for name in filenames:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    hashes[path] = hashlib.sha256(f.read()).hexdigest()
    return hashes


def run_dir(root: Path, run_id: str) -> RunDir:
    return RunDir.open(root / run_id)
