"""Ctrl-C at a safe point: a stretch of work that must finish once begun holds SIGINT until it ends.

Python raises KeyboardInterrupt wherever the main thread happens to be, so Ctrl-C one moment after a run's
folder is made could leave a folder without its first event (a run that verify cannot accept). Inside
`deferred_interrupts()` a SIGINT is only noted; it is raised as KeyboardInterrupt when the block ends, where
the caller's handler can record how the run ended. Before any command runs, while the `recorder` command
is still importing, Ctrl-C ends it at once (`guard_startup`): nothing has been done yet.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold SIGINT for the block (main thread only: signal handlers live there); re-raise it after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        pending.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pending:
        raise KeyboardInterrupt


STARTING = "recorder: interrupted while starting; nothing was done"


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    os.write(2, STARTING.encode() + b"\n")
    os._exit(130)


def guard_startup() -> None:
    """Ctrl-C while the `recorder` command still imports its modules (numpy, pyarrow: a second on a loaded
    machine) ends it with one line and exit 130, not a traceback. Only under the console script: a program
    that imports the package keeps its own handler."""
    if Path(sys.argv[0]).name == "recorder" and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupted_while_starting)


def end_startup() -> None:
    """The command runs: Ctrl-C raises KeyboardInterrupt again, for the command to stop at a safe point."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)
