"""For every command: a run's id is the one its own `run_opened` records, never its
folder's name. `cp -a r1 r1-copy` gives a folder every command calls r1, and a history that holds both says
one is left out rather than merging them under one id."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.cli.shell import run_main
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

    evals = run_main("evals", str(copied))
    assert evals.code == 0 and _named(r"^\s*(\S+): \d+ evaluations", evals.out) == ["r1"], evals.out

    verify = run_main("verify", str(copied))
    assert verify.code == 0, verify.out + verify.err
    assert _named(r"^run (\S+): \d+ segments", verify.out) == ["r1"], verify.out

    events = run_main("events", str(copied), "--kind", "run_opened")
    assert events.code == 0 and _named(r"^\s*(\S+): 1 events", events.out) == ["r1"], events.out

    replay = run_main("replay", str(copied))
    assert replay.code == 0, replay.out + replay.err
    rows = [json.loads(x) for x in (copied / "derived" / "scores.jsonl").read_text().splitlines()]
    assert {r["run_id"] for r in rows} == {"r1"}

    compact = run_main("compact", "--root", str(copied.parent))
    assert compact.code == 0 and _named(r"^(\S+): (?:compacted|fresh)", compact.out) == ["r1"], compact.out

    runs = run_main("runs", "--root", str(copied.parent))
    assert runs.code == 0 and "r1" in runs.out and "r1-copy" not in runs.out, runs.out + runs.err


def test_a_copy_beside_its_original_is_left_out_of_the_history_by_name(copied: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(copied, root / "r1", symlinks=True)
    shutil.copytree(copied, root / "r1-copy", symlinks=True)
    runs = run_main("runs", "--root", str(root))
    assert runs.code == 0, runs.out + runs.err
    said = runs.out + runs.err
    assert f"{root / 'r1-copy'}: left out of the history: it records run id 'r1', as {root / 'r1'} does" in said
    assert len(_named(r"^\S*\s*r1\s", runs.out)) == 1, runs.out  # one row, not two merged under r1
