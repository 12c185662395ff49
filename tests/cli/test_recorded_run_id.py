"""For every command: a run's id is the one its own `run_opened` records, never its
folder's name. `cp -a r1 r1-copy` gives a folder every command calls r1, and a history that holds both says
one is left out rather than merging them under one id."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.evaluator.synth import record_run
from tests.helpers import run_cli


@pytest.fixture(scope="module")
def copied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy, named r1-copy, of run r1 (tiny real checkpoints, evaluated at target 0.5 by nothing yet)."""
    base = tmp_path_factory.mktemp("copied")
    original = record_run(base / "originals", run_id="r1", steps=19, target=0.5, samples=2).path
    copy = base / "copies" / "r1-copy"
    shutil.copytree(original, copy, symlinks=True)  # cp -a r1 r1-copy
    return copy


def _named(pattern: str, text: str) -> list[str]:
    return re.findall(pattern, text, flags=re.MULTILINE)


def test_every_command_names_a_copied_run_by_its_recorded_id(copied: Path) -> None:
    done = run_cli("eval", str(copied), "--all")
    assert done.returncode in (0, 1), done.stdout + done.stderr  # scored; whether a random model passes is not asked
    assert _named(r"^run (\S+): \d+ evaluated", done.stdout) == ["r1"], done.stdout

    evals = run_cli("evals", str(copied))
    assert evals.returncode == 0 and _named(r"^\s*(\S+): \d+ evaluations", evals.stdout) == ["r1"], evals.stdout

    verify = run_cli("verify", str(copied))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert _named(r"^run (\S+): \d+ segments", verify.stdout) == ["r1"], verify.stdout

    events = run_cli("events", str(copied), "--kind", "run_opened")
    assert events.returncode == 0 and _named(r"^\s*(\S+): 1 events", events.stdout) == ["r1"], events.stdout

    replay = run_cli("replay", str(copied))
    assert replay.returncode == 0, replay.stdout + replay.stderr
    rows = [json.loads(x) for x in (copied / "derived" / "scores.jsonl").read_text().splitlines()]
    assert {r["run_id"] for r in rows} == {"r1"}

    compact = run_cli("compact", "--root", str(copied.parent))
    assert compact.returncode == 0 and _named(r"^(\S+): (?:compacted|fresh)", compact.stdout) == ["r1"], compact.stdout

    runs = run_cli("runs", "--root", str(copied.parent))
    assert runs.returncode == 0 and "r1" in runs.stdout and "r1-copy" not in runs.stdout, runs.stdout + runs.stderr


def test_a_copy_beside_its_original_is_left_out_of_the_history_by_name(copied: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(copied, root / "r1", symlinks=True)
    shutil.copytree(copied, root / "r1-copy", symlinks=True)
    runs = run_cli("runs", "--root", str(root))
    assert runs.returncode == 0, runs.stdout + runs.stderr
    said = runs.stdout + runs.stderr
    assert f"{root / 'r1-copy'}: left out of the history: it records run id 'r1', as {root / 'r1'} does" in said
    assert len(_named(r"^\S*\s*r1\s", runs.stdout)) == 1, runs.stdout  # one row, not two merged under r1
