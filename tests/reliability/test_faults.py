"""Faults around training and evaluation, each done for real: a full disk during a checkpoint write (a
small tmpfs), a read-only run directory for train and for eval, a checkpoint deleted after its commit.
Each gives a clear error, a typed exit code, and loses nothing already recorded."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from recorder.store.reader import read_run
from recorder.verify import verify_run
from tests.helpers import run_cli
from tests.reliability.crash import SMALL_TRAIN


def _mount(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    if (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here (needs root)")


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[list[Path]]:
    made: list[Path] = []
    yield made
    for m in reversed(made):
        subprocess.run(["umount", "-l", str(m)], check=True)


@pytest.fixture(scope="module")
def trained(small_run: tuple[Path, float]) -> Path:
    return small_run[0]


def _segments(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run / "events").iterdir())}


def _clean(r: subprocess.CompletedProcess[str]) -> str:
    text = " ".join((r.stdout + r.stderr).split())
    assert "Traceback" not in text, text
    return text


def test_disk_full_during_a_checkpoint_write(tmp_path: Path, mounts: list[Path]) -> None:
    """A 2 MiB filesystem: the events fit, the first 3 MiB checkpoint does not."""
    fs = tmp_path / "fs"
    _mount(fs, "2m")
    mounts.append(fs)
    r = run_cli("train", "--root", str(fs), "--run-id", "full", *SMALL_TRAIN)
    text = _clean(r)
    assert r.returncode == 1, text
    assert "No space left on device" in text and "train_stop" in text
    run = fs / "full"
    events = read_run(run).events
    assert not [e for e in events if e.kind == "checkpoint_committed"]
    stop = [e for e in events if e.kind == "train_stop"]
    assert len(stop) == 1 and stop[0].data["status"] == "failed"
    assert "step 18" in stop[0].data["reason"] and "No space left on device" in stop[0].data["reason"]
    assert {e.step for e in events if e.kind == "step_metrics"} >= set(range(1, 18))  # all before it kept
    assert verify_run(run).ok
    assert not list((run / "checkpoints").glob(".tmp-*")), "a failed write leaves no temporary directory"


def test_read_only_root_for_train(tmp_path: Path, mounts: list[Path]) -> None:
    fs = tmp_path / "ro"
    _mount(fs, "1m")
    mounts.append(fs)
    subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True)
    r = run_cli("train", "--root", str(fs), "--run-id", "x", *SMALL_TRAIN)
    text = _clean(r)
    assert r.returncode in (1, 2) and "read-only" in text.lower(), text


def test_read_only_run_for_eval(tmp_path: Path, mounts: list[Path], trained: Path) -> None:
    fs = tmp_path / "ro"
    _mount(fs, "16m")
    mounts.append(fs)
    run = fs / trained.name
    shutil.copytree(trained, run)
    before = _segments(run)
    subprocess.run(["mount", "-o", "remount,ro", str(fs)], check=True)
    r = run_cli("eval", str(run), "--all")
    text = _clean(r)
    assert r.returncode in (1, 2) and "read-only" in text.lower(), text
    assert _segments(run) == before and verify_run(run).ok


def test_checkpoint_deleted_after_commit(tmp_path: Path, trained: Path) -> None:
    run = tmp_path / trained.name
    shutil.copytree(trained, run)
    before = _segments(run)
    shutil.rmtree(run / "checkpoints" / "step_0000018")
    r = run_cli("eval", str(run), "--all")
    text = _clean(r)
    assert r.returncode == 1 and "step 18" in text and "step_0000018" in text, text
    events = read_run(run).events
    failed = [e for e in events if e.kind == "eval_failed"]
    assert [e.step for e in failed] == [18]
    assert [e.step for e in events if e.kind == "eval_result"] == [19]  # the other checkpoint is still scored
    after = _segments(run)
    assert all(after[name] == data for name, data in before.items())  # the trainer's events are untouched
    assert verify_run(run).ok
