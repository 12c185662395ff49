"""No command writes through a symlink planted at its output path: the file replaces the link, and what the
link pointed to is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.shell import run_main
from tests.kit.synthetic import record_run

VICTIM = b"a file outside the run that nobody asked to change\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    return record_run(root, "r", gbs=256, steps=20, evals=[(19, 0.72)], closed=True).path


COMMANDS = {
    "replay": lambda run, out: ["replay", str(run), "-o", str(out)],
    "report": lambda run, out: ["report", str(run), "-o", str(out)],
    "query": lambda run, out: ["query", "SELECT run_id FROM runs", "--root", str(run.parent), "-o", str(out)],
    "query csv": lambda run, out: [
        "query",
        "SELECT run_id FROM runs",
        "--root",
        str(run.parent),
        "--format",
        "csv",
        "-o",
        str(out),
    ],
    "plot": lambda run, out: ["plot", str(run), "-o", str(out)],
}
SUFFIX = {"replay": ".txt", "report": ".html", "query": ".txt", "query csv": ".csv", "plot": ".png"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_planted_output_symlink_is_replaced_never_followed(run: Path, tmp_path: Path, command: str) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    out = tmp_path / f"out{SUFFIX[command]}"
    out.symlink_to(victim)
    done = run_main(*COMMANDS[command](run, out))
    assert done.code == 0, done.out + done.err
    assert victim.read_bytes() == VICTIM
    assert not out.is_symlink() and out.stat().st_size > 0
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # nothing half-written left
