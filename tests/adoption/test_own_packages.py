"""A user's own `trainer.py`, `evaluator.py`, `replay.py` or `schemas.py` in the working directory shadows none
of the project's packages: every documented entry point runs from such a directory (recorder.own_packages).

The directory is also put first on PYTHONPATH, as a user's `PYTHONPATH=.` would, so that even the console
scripts (whose own folder is first on sys.path) meet the user's files before the project's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from recorder import __version__

SHADOWS = ("trainer", "evaluator", "replay", "schemas")
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("user")
    for name in SHADOWS:
        (d / f"{name}.py").write_text(f"raise RuntimeError('the user\\'s own {name}.py was imported')\n")
    return d


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([".", *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


ENTRY_POINTS = {
    "recorder --version": [str(BIN / "recorder"), "--version"],
    "recorder train --help": [str(BIN / "recorder"), "train", "--help"],
    "python -m recorder.cli --version": [sys.executable, "-m", "recorder.cli", "--version"],
    "torchrun -m recorder.cli train --help": [
        str(BIN / "torchrun"),
        "--nproc-per-node",
        "1",
        "-m",
        "recorder.cli",
        "train",
        "--help",
    ],
    "the mllog drop-in": [sys.executable, "-c", "from recorder.compat import mllog; print(mllog.constants.RUN_START)"],
    "the TRL callback": [
        sys.executable,
        "-c",
        "from recorder.adapters.trl import RecorderCallback; import trainer.policy, replay.derive, evaluator.settings, "
        "schemas; print(RecorderCallback.__name__)",
    ],
}


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=list(ENTRY_POINTS))
def test_an_entry_point_runs_beside_user_files_of_the_projects_names(entry: str, user_dir: Path) -> None:
    done = _run(ENTRY_POINTS[entry], user_dir)
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "the user's own" not in out, out
    if entry.endswith("--version"):
        assert __version__ in done.stdout
    if entry.endswith("--help"):
        assert "Usage:" in done.stdout


def test_the_user_files_do_shadow_a_plain_import(user_dir: Path) -> None:
    """Without the recorder imported first, Python itself finds the user's file: the files above do shadow."""
    done = _run([sys.executable, "-c", "import trainer"], user_dir)
    assert done.returncode == 1 and "the user's own trainer.py was imported" in done.stderr
