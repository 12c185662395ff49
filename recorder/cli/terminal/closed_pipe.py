"""A reader that stops reading (`recorder events --format json | head`): the command ends quietly, exit 0.

What the reader wanted it has; the rest of the output has nowhere to go. Python's advice for this case: point
stdout at /dev/null, so the interpreter's last flush at exit does not fail again.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer

F = TypeVar("F", bound=Callable[..., Any])


def quiet_when_the_reader_leaves(command: F) -> F:
    """`command`, ending with exit 0 and no message when its stdout's reader closed the pipe."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            result = command(*args, **kwargs)
            sys.stdout.flush()  # what is still buffered goes now, while a closed pipe can be told apart
            return result
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            raise typer.Exit(0) from None

    return run  # type: ignore[return-value]
