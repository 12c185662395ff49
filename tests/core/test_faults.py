"""Faults of the filesystem: disk full and read-only, on a real tmpfs. Nothing already recorded is lost."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from recorder.errors import LogWriteError
from recorder.log import LogWriter
from recorder.reader import read_run
from recorder.run import RunDir
from recorder.verify import verify_run


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 96 KiB tmpfs (needs root, as on CI and the dev machines; skipped elsewhere)."""
    mount = tmp_path / "fs"
    mount.mkdir()
    if (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(mount)], capture_output=True).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_disk_full_during_append_loses_nothing_before_it(small_fs: Path) -> None:
    run = RunDir.create(small_fs, "full")
    w = LogWriter(run, "trainer")
    appended = []
    with pytest.raises(LogWriteError, match=r"could not append step_metrics \(seq \d+\).*intact"):
        for i in range(10_000):
            appended.append(w.append("step_metrics", step=i, data={"pad": "x" * 2000}))
    assert len(appended) > 10
    events = read_run(run.path).events
    assert events == appended  # every event whose append returned, nothing partial
    assert verify_run(run).ok


def test_writer_recovers_when_space_returns(small_fs: Path) -> None:
    """Space comes back (a file was deleted): the same writer goes on where it stopped, no gap in seq."""
    ballast = small_fs / "ballast.bin"
    run = RunDir.create(small_fs, "r")
    w = LogWriter(run, "trainer")
    w.append("run_start")
    _fill(ballast)
    with pytest.raises(LogWriteError):
        w.append("step_metrics", step=1, data={"pad": "x" * 8000})
    ballast.unlink()
    w.append("step_metrics", step=1, data={"pad": "x" * 8000})
    w.close()
    kinds = [e.kind for e in read_run(run.path).events]
    assert kinds == ["run_start", "step_metrics", "segment_closed"]
    assert [e.seq for e in read_run(run.path).events] == [0, 1, 2]
    assert verify_run(run).ok


def test_read_only_run_directory(small_fs: Path) -> None:
    run = RunDir.create(small_fs, "ro")
    with LogWriter(run, "trainer") as w:
        w.append("run_start")
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    with pytest.raises(LogWriteError, match="cannot create the segment.*read-only"):
        LogWriter(run, "evaluator")
    assert [e.kind for e in read_run(run.path).events] == ["run_start", "segment_closed"]
    assert verify_run(run).ok


def _fill(ballast: Path) -> None:
    """Fill the filesystem to the last byte with a ballast file."""
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
