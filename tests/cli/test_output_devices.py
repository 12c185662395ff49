"""`-o` onto what is not a file the command may replace: a character device or FIFO is written through and stays
what it was, a block device is refused, a file the command did not write is never deleted; a write that fails
(a full device, for `-o` or for stdout, or a closed stdout) exits 1 with one `error:` line.

The devices are nodes made here, in the test's own folder, with the numbers of the machine's null and full
devices (writes to them behave as /dev/null's and /dev/full's); the machine's own are never touched. Where
the test may not make device nodes (not root, a container without the capability) those tests are skipped.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.shell import run_main
from tests.helpers import RECORDER
from tests.kit.synthetic import record_run

NULL = os.makedev(1, 3)  # Linux's memory devices: writes vanish
FULL = os.makedev(1, 7)  # every write fails with ENOSPC
LOOP = os.makedev(7, 0)  # a block device (loop0): never opened by the test


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    return record_run(root, "r", gbs=256, steps=20, evals=[(19, 0.72)], closed=True).path


def device(path: Path, number: int, kind: int = stat.S_IFCHR) -> Path:
    """A device node at `path` (skips the test where nodes may not be made here)."""
    try:
        os.mknod(path, kind | 0o666, number)
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot make device nodes here ({e.strerror})")
    return path


COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "replay": lambda run, out: ["replay", str(run), "-o", str(out)],
    "report": lambda run, out: ["report", str(run), "-o", str(out)],
    "query": lambda run, out: ["query", "SELECT run_id FROM runs", "--root", str(run.parent), "-o", str(out)],
    "query csv": lambda run, out: [
        "query",
        "SELECT 1 AS x",
        "--root",
        str(run.parent),
        "--format",
        "csv",
        "-o",
        str(out),
    ],
    "query json": lambda run, out: [
        "query",
        "SELECT 1 AS x",
        "--root",
        str(run.parent),
        "--format",
        "json",
        "-o",
        str(out),
    ],
    "plot": lambda run, out: ["plot", str(run), "-o", str(out)],
}


def same_node(path: Path, kind: int, number: int) -> bool:
    st = os.lstat(path)
    return stat.S_IFMT(st.st_mode) == kind and st.st_rdev == number


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_null_device_is_written_through_and_stays_a_device(run: Path, tmp_path: Path, command: str) -> None:
    null = device(tmp_path / "null", NULL)
    done = run_main(*COMMANDS[command](run, null))
    assert done.code == 0, done.err
    assert same_node(null, stat.S_IFCHR, NULL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temporary file left beside it


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_full_device_is_one_error_line_and_exit_1(run: Path, tmp_path: Path, command: str) -> None:
    full = device(tmp_path / "full", FULL)
    done = run_main(*COMMANDS[command](run, full))
    assert done.code == 1, done.out + done.err
    lines = [x for x in done.err.splitlines() if not x.startswith("warning:")]
    assert lines == [f"error: {full}: cannot write it (No space left on device)"]
    assert same_node(full, stat.S_IFCHR, FULL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_fifo_is_written_through_to_its_reader(run: Path, tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    done = run_main(*COMMANDS[command](run, fifo))
    reader.join(timeout=60)
    assert done.code == 0, done.err
    assert got and got[0], "the reader got nothing"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_block_device_is_refused_and_left_as_it_is(run: Path, tmp_path: Path) -> None:
    block = device(tmp_path / "disk", LOOP, stat.S_IFBLK)
    done = run_main("replay", str(run), "-o", str(block))
    assert done.code == 2
    assert done.err.splitlines() == [f"error: {block}: is a block device; give the path of a file to write"]
    assert same_node(block, stat.S_IFBLK, LOOP)


def test_a_file_the_command_did_not_write_is_never_deleted(run: Path, tmp_path: Path) -> None:
    """Files named as a temporary file of this process could be named are the user's: left as they are."""
    out = tmp_path / "out.txt"
    theirs = tmp_path / f".out.txt.{os.getpid()}.tmp"
    theirs.write_bytes(b"the user's\n")
    done = run_main("replay", str(run), "-o", str(out))
    assert done.code == 0, done.err
    assert theirs.read_bytes() == b"the user's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [theirs.name, "out.txt"]


def test_zero_shot_refuses_a_results_folder_that_is_a_device(tmp_path: Path) -> None:
    null = device(tmp_path / "null", NULL)
    done = run_main("zero-shot", str(tmp_path / "step_0000019"), "-o", str(null))
    assert done.code == 2
    assert done.err.splitlines()[0].startswith(f"error: -o {null}: is not a folder")
    assert same_node(null, stat.S_IFCHR, NULL)


def test_stdout_on_a_full_device_is_one_error_line_and_exit_1(run: Path, tmp_path: Path) -> None:
    full = device(tmp_path / "full", FULL)
    for args in (["runs", "--root", str(run.parent)], ["events", str(run), "--format", "json"]):
        with full.open("wb") as stdout:
            done = subprocess.run([RECORDER, *args], stdout=stdout, stderr=subprocess.PIPE, timeout=120)
        assert done.returncode == 1, done.stderr
        assert done.stderr.decode().splitlines() == ["error: standard output: cannot write (No space left on device)"]


def test_a_closed_stdout_is_one_error_line(run: Path) -> None:
    done = subprocess.run(
        [RECORDER, "runs", "--root", str(run.parent)],
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),  # `>&-`: the child starts without a stdout
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "error: standard output is closed; give the command somewhere to write (`> FILE`, or `> /dev/null`)"
    ]
