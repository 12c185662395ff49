"""Helpers shared by tests (not fixtures)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDER = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run `recorder ARGS...` in a subprocess, as a user would."""
    return subprocess.run([RECORDER, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def run_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """`recorder ARGS` in this process through the real entry point (typer, error mapping), returned as
    `run_cli` returns it: for tests that read what a command says and writes, not the process it runs in."""
    from tests.cli.shell import run_main

    done = run_main(*args)
    return subprocess.CompletedProcess([RECORDER, *args], done.code, done.out, done.err)


def on_terminal(columns: int, *args: str) -> str:
    """What `recorder ARGS` draws on a pseudo-terminal `columns` wide (util-linux `script`), as plain text:
    escape sequences left out, each carriage return a line break (so a progress frame is a line of its own).
    Callers skip where `script` is missing."""
    return plain(terminal_recording(columns, *args))


def plain(recording: str) -> str:
    """A terminal recording as plain text: escape sequences left out, each carriage return a line break."""
    text = ANSI.sub("", recording).replace("\r\n", "\n").replace("\r", "\n")
    assert "Traceback" not in text, text
    return text


def terminal_recording(columns: int, *args: str) -> str:
    """Every byte `recorder ARGS` writes to a pseudo-terminal `columns` wide (util-linux `script`), stdout and
    stderr as the terminal gets them, escape sequences and carriage returns as written."""
    command = f"stty cols {columns} rows 200; {shlex.join([RECORDER, *args])}"
    done = subprocess.run(
        ["script", "-qc", command, "/dev/null"],
        capture_output=True,
        env={**os.environ, "COLUMNS": str(columns)},
        timeout=600,
    )
    return done.stdout.decode("utf-8", "replace")


def _own_terminal() -> None:
    """In the child: the pseudo-terminal on its stdin becomes its controlling terminal, and Ctrl-C does what
    it does in a user's shell (a test run started in the background inherits SIGINT ignored)."""
    import fcntl
    import signal
    import termios

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def interrupted_on_terminal(columns: int, when: str, *command: str, timeout: float = 600) -> tuple[int, str]:
    """(exit status, every byte written) of `command` (argv) on a pseudo-terminal `columns` wide whose user
    types Ctrl-C once `when` is drawn: the terminal itself sends SIGINT to the command, as a shell's
    foreground job gets it, and echoes `^C` where the cursor is."""
    import fcntl
    import pty
    import select
    import struct
    import termios
    import time

    master, child_side = pty.openpty()
    fcntl.ioctl(child_side, termios.TIOCSWINSZ, struct.pack("HHHH", 200, columns, 0, 0))
    p = subprocess.Popen(
        list(command),
        stdin=child_side,
        stdout=child_side,
        stderr=child_side,
        env={**os.environ, "COLUMNS": str(columns)},
        start_new_session=True,  # a session of its own, whose controlling terminal is the pseudo-terminal
        preexec_fn=_own_terminal,
    )
    os.close(child_side)
    written, typed, deadline = bytearray(), False, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not select.select([master], [], [], 1)[0]:
                if p.poll() is not None:  # ended; a process it left behind may hold the terminal open
                    break
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # the command and everything it started closed the terminal
                break
            if not chunk:
                break
            written += chunk
            if not typed and when in ANSI.sub("", written.decode("utf-8", "replace")):
                os.write(master, b"\x03")
                typed = True
    finally:
        os.close(master)
    return p.wait(timeout=60), written.decode("utf-8", "replace")
