"""mlperf-logging's package checker on a submission folder, as its reviewers run it:
`python -m mlperf_logging.package_checker FOLDER training RULESET`.

It runs in a subprocess (it configures the root logger and prints), on a copy of the folder: its RCP check
rewrites each benchmark folder's scaling.json (`set_scaling=True`), and a checker must not change what it
checks. The copy, with the scaling factors it set, is what the summarizer would then score.

The copy holds regular files and folders only, each file at most FILE_LIMIT bytes and all of them at most
TOTAL_LIMIT: a symlink (to /dev/zero, or to a parent folder: a loop), a FIFO, a device or a sparse giant is
named and refused, never opened or followed, so nothing outside the folder is read and no read blocks.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from recorder.untrusted.tree_walk import MAX_DEPTH
from recorder.untrusted.untrusted_files import kind_of
from replay.checkers.check import CheckResult, mlperf_logging_version
from replay.errors import ImportFileError

NO_ERRORS = "PACKAGE CHECKER FOUND NO ERRORS"
FILE_LIMIT = 1 << 30  # the largest mllog of a real submission is a few MB
TOTAL_LIMIT = 8 << 30


class HostileSubmissionError(ImportFileError):
    """A submission folder holding entries that are not regular files or folders, or too large to copy."""

    def __init__(self, refused: list[str]) -> None:
        self.refused = refused
        super().__init__("\n".join(refused))


def copy_submission(folder: Path, copy: Path) -> None:
    """Copy the regular files and folders of `folder` to `copy`; HostileSubmissionError naming every refused
    entry (one line each) when there is any."""
    refused: list[str] = []
    total = [0]
    _copy_tree(folder, copy, refused, total)
    if refused:
        raise HostileSubmissionError(refused)


def _copy_tree(top: Path, top_copy: Path, refused: list[str], total: list[int]) -> None:
    """Folder by folder from a list, not the call stack: a submission nested past Python's recursion limit
    is refused by its depth (recorder.untrusted.tree_walk.MAX_DEPTH), naming the folder."""
    folders = [(top, top_copy, 0)]
    while folders:
        src, dst, depth = folders.pop()
        if depth > MAX_DEPTH:
            refused.append(f"{src}: folders nested more than {MAX_DEPTH} deep: not copied (remove the nesting)")
            continue
        dst.mkdir()
        try:
            entries = sorted(os.scandir(src), key=lambda e: e.name)
        except OSError as e:
            refused.append(f"{src}: cannot list the folder ({e.strerror}), not copied")
            continue
        for entry in entries:
            path = Path(entry.path)
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                folders.append((path, dst / entry.name, depth + 1))
            elif not stat.S_ISREG(mode):
                refused.append(f"{path}: {kind_of(mode)}, not a regular file: not copied (remove it from the folder)")
            else:
                _copy_file(path, dst / entry.name, refused, total)


def _copy_file(src: Path, dst: Path, refused: list[str], total: list[int]) -> None:
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as e:
        refused.append(f"{src}: cannot be read ({e.strerror}): not copied")
        return
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped since it was listed
            refused.append(f"{src}: {kind_of(st.st_mode)}, not a regular file: not copied")
            return
        if st.st_size > FILE_LIMIT or total[0] + st.st_size > TOTAL_LIMIT:
            refused.append(
                f"{src}: {st.st_size:,} bytes, more than a submission file may be ({FILE_LIMIT:,}; "
                f"{TOTAL_LIMIT:,} in all): not copied"
            )
            return
        data = f.read(FILE_LIMIT + 1)
    if len(data) > FILE_LIMIT:
        refused.append(f"{src}: grew past {FILE_LIMIT:,} bytes while it was copied: not copied")
        return
    total[0] += len(data)
    with open(dst, "xb") as out:
        out.write(data)


@dataclass(frozen=True)
class PackageCheck:
    """The package checker's verdict and the checked copy of the submission (for scoring)."""

    result: CheckResult
    copy: Path


def check_package(folder: Path, ruleset: str, workdir: Path) -> PackageCheck:
    """Copy `folder` under `workdir`, run the package checker on the copy, and read its verdict."""
    copy = workdir / folder.resolve().name
    copy_submission(folder, copy)
    log = workdir / "package_checker.log"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mlperf_logging.package_checker",
            str(copy),
            "training",
            ruleset,
            "--log_output",
            str(log),
        ],
        capture_output=True,
        text=True,
        cwd=workdir,
    )
    output = done.stdout + done.stderr
    errors = tuple(
        explained(line.removeprefix("ERROR - ").replace(str(copy), str(folder)))
        for line in output.splitlines()
        if line.startswith("ERROR - ")
    )
    version = mlperf_logging_version()
    if done.returncode != 0:
        last = next((ln for ln in reversed(output.splitlines()) if ln.strip()), f"exit status {done.returncode}")
        crash = f"checker error: {last.strip().replace(str(copy), str(folder))}"
        return PackageCheck(CheckResult("package checker", ruleset, False, errors, version, crash), copy)
    ok = NO_ERRORS in output
    return PackageCheck(CheckResult("package checker", ruleset, ok, errors, version), copy)


# The RCP checker's messages name the case it took, not what failed (rcp_checker.check_directory): "RCP found"
# means a reference existed and the runs converged faster than it allows.
_RCP_FAILED = re.compile(r"RCP Test Failed: (?P<why>.*)$")
_RCP_MEANING = {
    "RCP found": "the reference convergence points (RCPs) for this global batch size exist, and these runs "
    "converge in fewer epochs than they allow (the set's mean is below the RCPs' minimum)",
    "RCP Interpolation": "the RCPs interpolated for this global batch size say these runs converge in fewer "
    "epochs than allowed (the set's mean is below the minimum)",
    "Cannot find any RCPs": "mlperf-logging has no RCPs for this benchmark",
    "Insufficient convergence": "too few runs converged to compare with the RCPs",
    "Could not detect global_batch_size": "no global_batch_size line was found in the logs",
}


def explained(message: str) -> str:
    """A package checker error with what it means where its wording does not say ("RCP found": a failure)."""
    found = _RCP_FAILED.search(message)
    if found is None:
        return message
    why = found.group("why").strip()
    meaning = _RCP_MEANING.get(why)
    if meaning is None and why.startswith("Missing RCP"):
        meaning = "no RCP exists for this global batch size: reference runs at it must be submitted first"
    return message if meaning is None else f"RCP test failed: {meaning} (mlperf-logging: {message.strip()})"
