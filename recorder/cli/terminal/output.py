"""The one place that decides how the command line prints.

A terminal gets rich's usual layout. Anything else (a pipe, a file, a test) gets a console that never wraps:
paths and run ids must reach scripts whole, whatever COLUMNS says or however long the clone's path is.

Both consoles read no markup: run ids, mllog values and SQL results are user data, and a value such as
`[/x]` must print as itself, never crash a table or vanish as a style tag. Styling is explicit, through
`label` (a styled word) and `Text`, so no call site can forget to escape.

Nor can user data drive the terminal: control characters (an ANSI escape such as `\x1b[2J` clears the
screen), NUL and the bidirectional overrides that make text read other than it is stored (U+202E) are
printed as visible escapes (`\x1b`, `\u202e`) by the consoles themselves, whatever the command.

rich loads when something is first printed, not when the command line is read: `console` and `err` are made
on first use, so `recorder --help` and a refused command line never import it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderableType, RenderHook
    from rich.live import Live
    from rich.segment import Segment
    from rich.text import Text

# Wide enough that no table or line is ever folded for width; a pipe has no width to respect.
PIPE_WIDTH = 100_000
# A displayed value longer than this is cut (the full value stays in the events and in --format json/csv): a
# 400 MB string must not make `recorder events` lay out 400 MB of table cells. PATH_MAX, so a path stays whole.
DISPLAY_CHARS = 4096


# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidirectional controls.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with every character that could drive a terminal or reorder what it shows as an escape."""
    return UNSAFE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


@functools.cache
def _safe_console() -> type[Console]:
    """SafeConsole, defined when first needed (it is a rich Console)."""
    from rich.console import Console
    from rich.segment import Segment

    class SafeConsole(Console):
        """A rich Console whose rendered text never carries a control character from the data it shows (its
        own styling, which rich emits as control segments and style codes, is untouched). Strings are made
        visible before rich measures them, so tables keep their widths; `render` is the net for the rest."""

        def render_str(self, text: str, **kwargs: Any) -> Text:
            return super().render_str(visible(text), **kwargs)

        def on_broken_pipe(self) -> None:
            """The reader left (`| head`): rich would exit 1 here; the command ends quietly with 0 instead
            (recorder.cli.terminal.closed_pipe)."""
            raise BrokenPipeError

        def set_live(self, live: Live) -> bool:
            _bars.append(live)
            return super().set_live(live)

        def clear_live(self) -> None:
            super().clear_live()
            mine = [bar for bar in _bars if bar.console is self]
            if mine:
                _bars.remove(mine[-1])

        def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
            for segment in super().render(renderable, options):
                if segment.control is None and UNSAFE.search(segment.text):
                    yield Segment(visible(segment.text), segment.style)
                else:
                    yield segment

    return SafeConsole


# The live displays (progress bars) being drawn now, on either console, last started last.
_bars: list[Live] = []


def _above_other_bars(console: Console) -> RenderHook:
    """A render hook for a terminal `console`: what it prints while a bar is drawn on the other stream's
    console (the same terminal) goes above the bar, as on the bar's own console: the bar is erased first and
    drawn again under it. Without it the bar's last frame stays on the screen with the printed line glued to
    its end, and the bar's next frame erases lines it no longer owns."""
    from rich.console import RenderHook

    class AboveOtherBars(RenderHook):
        def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
            drawn = [bar for bar in _bars if bar.console is not console and bar.console.is_terminal]
            return drawn[-1].process_renderables(renderables) if drawn else renderables

    return AboveOtherBars()


# `recorder -q`: stderr's console prints nothing and draws no bar (errors are `say`'s, and still shown).
quiet_stderr = False


def make_console(*, stderr: bool = False, file: object = None) -> Console:
    """A console that treats every string as plain text, and never wraps unless it writes to a terminal."""
    if stderr and file is None and quiet_stderr:
        return _safe_console()(stderr=True, quiet=True, force_terminal=False, markup=False, highlight=False)
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        made = _safe_console()(stderr=stderr, file=file, highlight=False, markup=False, emoji=False)  # type: ignore[arg-type]
        made.push_render_hook(_above_other_bars(made))
        return made
    return _safe_console()(
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
    from rich.text import Text

    return Text(word, style=style)


def line(*parts: str | Text) -> Text:
    """One output line from plain strings and styled labels, joined by single spaces."""
    from rich.text import Text

    text = Text()
    for i, part in enumerate(parts):
        if i:
            text.append(" ")
        text.append(visible(part) if isinstance(part, str) else part)
    return text


def warning(message: str) -> Text:
    return line(label("warning:", "yellow"), message)


def cut(value: str, limit: int = DISPLAY_CHARS) -> str:
    """`value` for display: at most `limit` characters, with how much was left out."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}... ({len(value) - limit} more characters)"


class _OnFirstUse:
    """A console made the first time it is used (rich loads then), standing for it in every other way."""

    def __init__(self, stderr: bool) -> None:
        object.__setattr__(self, "_stderr", stderr)
        object.__setattr__(self, "_made", None)

    def _console(self) -> Console:
        if self._made is None:
            object.__setattr__(self, "_made", make_console(stderr=self._stderr))
        return cast("Console", self._made)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._console(), name, value)

    def __enter__(self) -> Console:  # special methods bypass __getattr__: rich's Live enters its console
        return self._console().__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._console().__exit__(*exc)


def made(c: Console) -> Console:
    """The rich Console itself behind `console` or `err` (for rich's own classes, which hold it)."""
    return c._console() if isinstance(c, _OnFirstUse) else c


console = cast("Console", _OnFirstUse(stderr=False))
err = cast("Console", _OnFirstUse(stderr=True))


def set_quiet(quiet: bool) -> None:
    """`recorder -q`: stderr's console made again, silent, when next used (and as usual without -q: a process
    that runs several command lines, as the tests do, gets each one's own)."""
    global quiet_stderr
    if quiet != quiet_stderr:
        quiet_stderr = quiet
        object.__setattr__(err, "_made", None)


def at_spaces(text: str, console: Console, whole: Iterable[str] = ()) -> str:
    """`text` with each line longer than a terminal `console` broken at spaces, never inside a word (rich would
    fold a word longer than the line, a path or a run's name; the terminal shows it whole on its own line), nor
    inside any of `whole` (a path or a name that may hold spaces: it goes on a line of its own instead)."""
    if not console.is_terminal:
        return text
    return fill_at_spaces(text, console.width, whole)


def say(message: str, word: str = "") -> None:
    """`word message` on stderr, without rich (an error ends a command that may never have printed: loading
    rich for one line would double the cost of a refused command line). On a terminal the line breaks at
    spaces and `word` is bold red unless NO_COLOR is set; elsewhere it is one line."""
    text = visible(f"{word} {message}" if word else message)
    stream = sys.stderr
    if stream.isatty():
        text = fill_at_spaces(text, shutil.get_terminal_size().columns)
        if word and not os.environ.get("NO_COLOR"):
            text = f"\x1b[1;31m{word}\x1b[0m{text[len(word) :]}"
    stream.write(text + "\n")
    stream.flush()


# Stands for a space inside a part of a line that must not be broken while the line is wrapped: a character
# from Unicode's private use area, which no path, name or message of the tool holds.
_KEPT_SPACE = "\ue000"


def fill_at_spaces(text: str, width: int, whole: Iterable[str] = ()) -> str:
    """Each line of `text` longer than `width` broken at spaces; a word longer than the line stays whole, and
    so does each of `whole` (its spaces are not places to break)."""
    kept = sorted((part for part in whole if " " in part), key=len, reverse=True)  # longest first
    for part in kept:
        text = text.replace(part, part.replace(" ", _KEPT_SPACE))
    filled = "\n".join(
        line if len(line) <= width else textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False)
        for line in text.split("\n")
    )
    return filled.replace(_KEPT_SPACE, " ")
