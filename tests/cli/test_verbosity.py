"""`recorder -q CMD`: results on stdout, errors on stderr, nothing else (no progress, notes or warnings);
`recorder -v CMD`: the libraries' own logs left on. Each command line of a process gets its own setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder.cli import verbose_asked
from tests.cli.shell import run_main
from tests.kit.synthetic import record_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # no checkpoint files: verify warns that it could not check them
    return record_run(tmp_path_factory.mktemp("quiet"), "r", gbs=256, steps=20, evals=[(19, 0.72)], closed=True).path


def test_quiet_keeps_results_and_errors_and_drops_warnings(run: Path) -> None:
    loud = run_main("verify", str(run))
    assert loud.code == 0 and "warning:" in loud.err
    quiet = run_main("-q", "verify", str(run))
    assert quiet.code == 0 and quiet.err == ""
    assert quiet.out == loud.out
    again = run_main("verify", str(run))  # the next command line is not quiet
    assert again.err == loud.err
    refused = run_main("-q", "verify", str(run.parent / "nope"))
    assert refused.code == 2 and refused.err.startswith("error: ")


def test_quiet_and_verbose_together_are_refused(run: Path) -> None:
    done = run_main("-q", "-v", "verify", str(run))
    assert done.code == 2 and done.err.startswith("error: ") and "-q and -v" in done.err


@pytest.mark.parametrize(
    ("args", "verbose"),
    [(["-v", "runs"], True), (["--verbose", "runs"], True), (["-q", "runs"], False), (["runs", "-v"], False)],
)
def test_verbose_is_read_before_the_command(args: list[str], verbose: bool) -> None:
    assert verbose_asked(args) is verbose
