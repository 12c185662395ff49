"""A run that cannot be written (a read-only copy of an honest run) is replayed, checked and scored as its
writable copy is: its derived files go to another folder, one line says where, and nothing is written into it.
The copy sits behind a read-only bind mount: root passes every permission check, a read-only mount refuses
root too."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.replay.corpus_index import FIXTURE_RESULTS

# five real result files, small and scored by the summarizer (803.59 minutes)
RETINANET = FIXTURE_RESULTS / "training_results_v5.0/tinycorp/results/tinybox_green/retinanet"


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("writable")
    folder = root / "retinanet"
    shutil.copytree(RETINANET, folder)
    done = run_cli("import", str(folder), "--root", str(root / "runs"), "--ruleset", "5.0.0")
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "runs"


@pytest.fixture
def read_only(imported: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the imported runs, reached through a read-only bind mount."""
    source, mount = tmp_path / "source", tmp_path / "ro"
    shutil.copytree(imported, source)
    mount.mkdir()
    if subprocess.run(["mount", "--bind", str(source), str(mount)], capture_output=True).returncode != 0:
        pytest.skip("cannot bind-mount here (needs root): chmod alone does not stop root writing")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mount)], check=True, capture_output=True)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _said(done: subprocess.CompletedProcess[str]) -> str:
    text = " ".join((done.stdout + done.stderr).split())
    assert "Traceback" not in text and "OSError" not in text, text
    return text


def test_replay_check_on_a_read_only_run_gives_the_writable_runs_verdict(imported: Path, read_only: Path) -> None:
    run = sorted(p for p in read_only.iterdir())[0]
    before = _tree(read_only)
    writable = run_cli("replay", str(imported / run.name), "--check")
    assert writable.returncode == 0 and "PASSED" in writable.stdout, writable.stdout + writable.stderr
    done = run_cli("replay", str(run), "--check")
    text = _said(done)
    assert done.returncode == writable.returncode, text
    notes = re.findall(r"note: (\S+)/derived cannot be written \(Read-only file system\)", text)
    assert notes == [str(run)], text
    went = re.search(r"derived files go to (\S+)", text)
    assert went is not None
    assert re.search(rf"-> {re.escape(went.group(1))}/result_as-recorded\.txt", text), text
    assert Path(went.group(1), "scores.jsonl").is_file()
    # the same verdict lines, the paths aside
    assert [ln for ln in done.stdout.splitlines() if "checker" in ln] == [
        ln for ln in writable.stdout.splitlines() if "checker" in ln
    ]
    assert _tree(read_only) == before


def test_score_on_read_only_runs_gives_the_writable_runs_score(imported: Path, read_only: Path) -> None:
    runs = sorted(read_only.iterdir())
    before = _tree(read_only)
    writable = run_cli("score", *(str(imported / r.name) for r in runs), "--format", "json")
    assert writable.returncode == 0, writable.stdout + writable.stderr
    done = run_cli("score", *map(str, runs), "--format", "json")
    _said(done)
    assert done.returncode == 0, done.stdout + done.stderr
    ours, theirs = json.loads(done.stdout), json.loads(writable.stdout)
    assert ours["score_minutes"] == theirs["score_minutes"] == pytest.approx(803.5947, abs=1e-4)
    assert len(ours["notes"]) == len(runs) and "notes" not in theirs
    assert done.stderr.count("cannot be written (Read-only file system)") == len(runs)
    assert _tree(read_only) == before
