"""An input that is not a regular file, or larger than its reader allows, gives one `error:` line and exit
2: a FIFO is never opened (it would block), /dev/zero never read (it never ends), a sparse file never
loaded (it would take all memory)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import run_cli


def _input(tmp_path: Path, what: str) -> Path:
    path = tmp_path / "result_0.txt"
    if what == "fifo":
        os.mkfifo(path)
    elif what == "dev-zero":
        path.symlink_to("/dev/zero")
    elif what == "sparse":
        with open(path, "wb") as f:
            f.truncate(4 << 30)  # 4 GiB of holes: no disk used
    return path


@pytest.mark.parametrize("what", ["fifo", "dev-zero", "sparse"])
def test_import_of_an_irregular_or_giant_file_is_one_error_line(tmp_path: Path, what: str) -> None:
    path = _input(tmp_path, what)
    done = run_cli("import", str(path), "--root", str(tmp_path / "runs"), timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and str(path) in line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("what", ["fifo", "dev-zero", "sparse"])
def test_a_result_folder_holding_an_irregular_log_is_one_error_line(tmp_path: Path, what: str) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    _input(folder, what)
    done = run_cli("import", str(folder), "--root", str(tmp_path / "runs"), timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert [ln for ln in done.stderr.splitlines() if ln.startswith("error: ")], done.stderr
