"""Faults of the filesystem: disk full and read-only, on a real tmpfs. Nothing already recorded is lost."""

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from recorder.errors import LogWriteError
from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir
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


def _train(root: Path, preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "recorder"
    command = [str(exe), "train", "--root", str(root), "--run-id", "r", "--set", "warmup.enabled=false"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, preexec_fn=preexec)


def _assert_no_run_left(done: subprocess.CompletedProcess[str], root: Path) -> None:
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    (said,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert f"{root / 'r'}: the run's first events could not be written" in said, said
    assert "no run was left" in said and "intact" not in said, said
    assert not (root / "r").exists()  # no folder that verify would call altered


@pytest.mark.parametrize("free_kib", [0, 36], ids=["no segment", "some events"])
def test_a_run_that_cannot_record_its_first_events_on_a_full_disk_is_not_left(small_fs: Path, free_kib: int) -> None:
    pytest.importorskip("torch")
    ballast = small_fs / "ballast.bin"
    _fill(ballast)
    if free_kib:
        os.truncate(ballast, ballast.stat().st_size - free_kib * 1024)
    _assert_no_run_left(_train(small_fs / "runs"), small_fs / "runs")


@pytest.mark.parametrize("limit", [512, 16_384], ids=["no segment", "some events"])
def test_a_run_whose_first_events_exceed_the_file_size_limit_is_not_left(tmp_path: Path, limit: int) -> None:
    """The same without root: the process's RLIMIT_FSIZE makes the kernel refuse the write (EFBIG)."""
    pytest.importorskip("torch")

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    _assert_no_run_left(_train(tmp_path / "runs", limited), tmp_path / "runs")
