"""mlperf-logging's package checker on a submission folder, as its reviewers run it:
`python -m mlperf_logging.package_checker FOLDER training RULESET`.

It runs in a subprocess (it configures the root logger and prints), on a copy of the folder: its RCP check
rewrites each benchmark folder's scaling.json (`set_scaling=True`), and a checker must not change what it
checks. The copy, with the scaling factors it set, is what the summarizer would then score.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from replay.check import CheckResult, mlperf_logging_version

NO_ERRORS = "PACKAGE CHECKER FOUND NO ERRORS"


@dataclass(frozen=True)
class PackageCheck:
    """The package checker's verdict and the checked copy of the submission (for scoring)."""

    result: CheckResult
    copy: Path


def check_package(folder: Path, ruleset: str, workdir: Path) -> PackageCheck:
    """Copy `folder` under `workdir`, run the package checker on the copy, and read its verdict."""
    copy = workdir / folder.resolve().name
    shutil.copytree(folder, copy)
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
