"""Ctrl-C at a safe point: a stretch of work that must finish once begun holds SIGINT until it ends.

Python raises KeyboardInterrupt wherever the main thread happens to be, so Ctrl-C one moment after a run's
folder is made could leave a folder without its first event (a run that verify cannot accept). Inside
`deferred_interrupts()` a SIGINT is only noted; it is raised as KeyboardInterrupt when the block ends, where
the caller's handler can record how the run ended. Before any command runs, while the `recorder` command
is still importing, Ctrl-C ends it at once (`guard_startup`): nothing has been done yet.

While a command runs, Ctrl-C is raised only where Python can unwind: not inside an import (a C extension's
module initialiser, pybind11's among them, that meets KeyboardInterrupt calls std::terminate: the process
dies of SIGABRT) and not inside a finalizer (`__del__`, where Python prints the exception and drops it, so
the command would go on). There the signal is sent again a moment later (`raise_at_safe_point`).
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
    if _redelivering.is_set():  # a Ctrl-C held back by an import or a finalizer: the block does not begin
        _redelivering.clear()
        raise KeyboardInterrupt
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


REDELIVER_S = 0.02


def _unwindable(frame: FrameType | None) -> bool:
    """Whether KeyboardInterrupt raised in `frame` reaches the command: no import and no finalizer below it."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.startswith("<frozen importlib"):
            return False
        frame = frame.f_back
    return True


_redelivering = threading.Event()  # a Ctrl-C is held back and will be sent again


def _send_again(signum: int) -> None:
    if _redelivering.is_set():  # not raised meanwhile (by deferred_interrupts, at its start)
        os.kill(os.getpid(), signum)


def raise_at_safe_point(signum: int, frame: FrameType | None) -> None:
    """SIGINT handler while a command runs: KeyboardInterrupt now if it can unwind, else the signal again soon."""
    if _unwindable(frame):
        _redelivering.clear()
        raise KeyboardInterrupt
    _redelivering.set()
    again = threading.Timer(REDELIVER_S, _send_again, (signum,))
    again.daemon = True
    again.start()


def end_startup() -> None:
    """The command runs: Ctrl-C raises KeyboardInterrupt again, for the command to stop at a safe point."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, raise_at_safe_point)
