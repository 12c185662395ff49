"""A reader that leaves early (`recorder events RUN --format json | head`): the command ends quietly, exit 0,
whether it prints with typer (json lines) or rich (tables)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import RECORDER
from tests.kit.synthetic import record_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_run(tmp_path_factory.mktemp("pipe"), "demo", gbs=256, steps=20, evals=[(18, 0.72)], closed=True).path


@pytest.mark.parametrize(
    "args",
    [
        ["events", "{run}", "--format", "json"],
        ["events", "{run}"],
        ["query", "--root", "{root}", "SELECT * FROM events"],
    ],
    ids=["events json", "events table", "query"],
)
def test_a_reader_that_leaves_ends_the_command_quietly(run: Path, args: list[str]) -> None:
    argv = [a.format(run=run, root=run.parent) for a in args]
    proc = subprocess.Popen([RECORDER, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `head` does once it has its lines: every write after this one fails
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, stderr
    assert stderr == ""
