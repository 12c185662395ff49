"""The in-process runner the CLI tests share (tests/cli/shell.py) leaves the test process as it found it."""

from __future__ import annotations

import signal

from tests.cli.shell import run_main


def test_a_command_run_in_process_leaves_ctrl_c_as_it_was() -> None:
    # main() ignores SIGINT on its way out; a test's later subprocesses would inherit that and never see Ctrl-C
    before = signal.getsignal(signal.SIGINT)
    assert run_main("--version").code == 0
    assert signal.getsignal(signal.SIGINT) is before
