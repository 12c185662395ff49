"""Standard output that refuses what a command prints (`> /dev/full`, a full disk, `>&-`): one `error:` line,
exit 1, never a traceback and never exit 0 with the output lost.

The command's stdout is watched for as long as it runs: a write or flush that fails becomes a LogWriteError
naming standard output. A reader that left (a closed pipe, `| head`) is not a failure and passes through as
BrokenPipeError (recorder.cli.terminal.closed_pipe). A failure a library caught is still reported when the command
ends. After a failure stdout points at /dev/null, so the interpreter's own flush at exit does not fail again.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from recorder.errors import LogWriteError

F = TypeVar("F", bound=Callable[..., Any])


class StdoutWriteError(LogWriteError):
    """Standard output refused what the command printed."""


def _silence() -> None:
    """Point stdout at /dev/null: what is still buffered has nowhere to go, and must not fail again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


class _Watched:
    """A stream standing for `stream` in every way, but a failed write or flush raises StdoutWriteError."""

    def __init__(self, stream: Any, failures: list[StdoutWriteError] | None = None) -> None:
        self._stream = stream
        # shared with the buffer's watcher; kept, because a library may swallow the error (click's probe of
        # whether a stream takes bytes catches every exception), and the command must still not exit 0
        self.failures: list[StdoutWriteError] = [] if failures is None else failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    @property
    def buffer(self) -> Any:  # click writes bytes to the text stream's buffer
        return _Watched(self._stream.buffer, self.failures)

    def write(self, data: Any) -> Any:
        try:
            return self._stream.write(data)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._failed(e) from e

    def _failed(self, e: OSError) -> StdoutWriteError:
        failure = StdoutWriteError(f"standard output: cannot write ({e.strerror or e})")
        self.failures.append(failure)
        return failure

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._failed(e) from e


def stdout_failures_said(command: F) -> F:
    """`command`, ending with one `error:` line (exit 1) when its standard output is closed or refuses a write."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        stdout = sys.stdout
        if stdout is None:  # started with `>&-`: Python has no stdout to give the command
            raise StdoutWriteError(
                "standard output is closed; give the command somewhere to write (`> FILE`, or `> /dev/null`)"
            )
        watched = _Watched(stdout)
        sys.stdout = watched
        try:
            result = command(*args, **kwargs)
            watched.flush()
        finally:
            if sys.stdout is watched:
                sys.stdout = stdout
            if watched.failures:
                _silence()
        if watched.failures:
            raise watched.failures[0]
        return result

    return run  # type: ignore[return-value]
