"""The one place that decides how the command line prints.

A terminal gets rich's usual layout. Anything else (a pipe, a file, a test) gets a console that never wraps:
paths and run ids must reach scripts whole, whatever COLUMNS says or however long the clone's path is.

Both consoles read no markup: run ids, mllog values and SQL results are user data, and a value such as
`[/x]` must print as itself, never crash a table or vanish as a style tag. Styling is explicit, through
`label` (a styled word) and `Text`, so no call site can forget to escape.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.text import Text

# Wide enough that no table or line is ever folded for width; a pipe has no width to respect.
PIPE_WIDTH = 100_000
# A displayed value longer than this is cut (the full value stays in the events and in --format json/csv): a
# 400 MB string must not make `recorder events` lay out 400 MB of table cells. PATH_MAX, so a path stays whole.
DISPLAY_CHARS = 4096


def make_console(*, stderr: bool = False, file: object = None) -> Console:
    """A console that treats every string as plain text, and never wraps unless it writes to a terminal."""
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return Console(stderr=stderr, file=file, highlight=False, markup=False, emoji=False)  # type: ignore[arg-type]
    return Console(
        stderr=stderr,
        file=file,  # type: ignore[arg-type]
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
        width=PIPE_WIDTH,
    )


def label(word: str, style: str) -> Text:
    """A styled word such as `warning:`; the rest of the line is appended as plain text."""
    return Text(word, style=style)


def line(*parts: str | Text) -> Text:
    """One output line from plain strings and styled labels, joined by single spaces."""
    text = Text()
    for i, part in enumerate(parts):
        if i:
            text.append(" ")
        text.append(part)
    return text


def warning(message: str) -> Text:
    return line(label("warning:", "yellow"), message)


def cut(value: str, limit: int = DISPLAY_CHARS) -> str:
    """`value` for display: at most `limit` characters, with how much was left out."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}... ({len(value) - limit} more characters)"


console = make_console()
err = make_console(stderr=True)
