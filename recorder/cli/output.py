"""The one place that decides how the command line prints.

A terminal gets rich's usual layout. Anything else (a pipe, a file, a test) gets a console that never wraps:
paths and run ids must reach scripts whole, whatever COLUMNS says or however long the clone's path is.
"""

from __future__ import annotations

import sys

from rich.console import Console

# Wide enough that no table or line is ever folded for width; a pipe has no width to respect.
PIPE_WIDTH = 100_000


def _console(*, stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr, highlight=False)
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=PIPE_WIDTH)


console = _console(stderr=False)
err = _console(stderr=True)
