"""Progress on a terminal for work that takes more than a moment; nothing of it on a pipe or in a file.

A bar says what is being done, how much of it is done and how much is left (count or bytes, elapsed and
remaining time); it is erased when the work ends or Ctrl-C stops it, and never reaches a script's output. It
draws through the console the command prints its results on when that is the terminal; on stderr when only
stderr is the terminal. A line printed while the bar runs goes above the bar on either console (rich clears
and redraws it; recorder.cli.terminal.output does the same for the other stream's console).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from recorder.cli.terminal.output import console, err, made

if TYPE_CHECKING:  # rich loads when a bar is drawn, on a terminal only
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn, TaskID

Advance = Callable[[int], None]  # how much more is done (items, or bytes)


def _terminal() -> Console:
    return made(console if console.is_terminal else err)


# Columns a bar leaves free at the end of its lines: the terminal echoes Ctrl-C as `^C` where the cursor is,
# at the end of the bar's last line; a line that filled the width would wrap, and the bar, erasing the lines
# it drew, would erase one line too low and leave its last frame on the screen.
ECHO_ROOM = 2


@functools.cache
def _erasable_bar() -> type[Progress]:
    """A rich Progress whose lines end ECHO_ROOM columns short of the terminal's width."""
    from rich.console import ConsoleOptions, RenderableType, RenderResult
    from rich.progress import Progress

    class ShortOfTheEdge:
        def __init__(self, inner: RenderableType) -> None:
            self.inner = inner

        def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
            yield from console.render(self.inner, options.update_width(max(1, options.max_width - ECHO_ROOM)))

    class ErasableBar(Progress):
        def get_renderable(self) -> RenderableType:
            return ShortOfTheEdge(super().get_renderable())

    return ErasableBar


def terminal_bar(*columns: ProgressColumn | str, on: Console | None = None) -> Progress:
    """A bar of `columns` on the terminal (`on`: that console, else the results' console when it is the
    terminal, else stderr's), erased when it stops, Ctrl-C included. Whatever is printed meanwhile, on either
    console or by print() to a stream that is the same terminal, goes above it; a stream that is a pipe or a
    file is left alone (rich would send what a script writes to stdout into the bar's stream)."""
    import sys

    return _erasable_bar()(
        *columns,
        console=on or _terminal(),
        transient=True,
        redirect_stdout=sys.stdout.isatty(),
        redirect_stderr=sys.stderr.isatty(),
    )


@contextmanager
def progress(description: str, total: int | None, *, unit: str = "items") -> Iterator[Advance]:
    """A bar of `total` (None: a spinner with the time spent) while the block runs, on a terminal only.
    `unit` "bytes" shows sizes; otherwise "done/total"."""
    if not err.is_terminal:
        yield lambda n: None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    amount = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), amount, TimeElapsedColumn()]
    with terminal_bar(*columns, TimeRemainingColumn()) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


@contextmanager
def working(description: str) -> Iterator[None]:
    """A spinner with the time spent, for a step whose size is not known in advance (loading a model)."""
    if not err.is_terminal:
        yield
        return
    from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

    with terminal_bar(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()) as bar:
        bar.add_task(description, total=None)
        yield


class UntilFirst:
    """A spinner from the start of a command until its first result (`done`), for the seconds a command
    spends before it can say anything (verifying the run, loading torch and the model)."""

    def __init__(self, description: str) -> None:
        self._bar: Progress | None = None
        if err.is_terminal:
            from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

            self._bar = terminal_bar(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
            self._bar.add_task(description, total=None)
            self._bar.start()

    def done(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> UntilFirst:
        return self

    def __exit__(self, *exc: object) -> None:
        self.done()


class PerItem:
    """Progress of several items worked on at once (checkpoints on workers): one bar for all of them (parts
    done of all, how many items are finished, the time left) and one line per unfinished item saying what it
    does now. `report(item, doing, done, total)` is called from the main thread; `doing` "done" ends an item.
    On a pipe it draws nothing."""

    def __init__(self, description: str) -> None:
        self._description = description
        self._items: dict[str, tuple[int, int]] = {}  # item: (parts done, parts in all)
        self._rows: dict[str, TaskID] = {}
        self._bar: Progress | None = None
        self._all: TaskID | None = None
        if err.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
            # on stderr: a results table printed meanwhile on stdout keeps its own layout (rich folds what a
            # script print()s through a live display to the display's width)
            self._bar = terminal_bar(*columns, TimeElapsedColumn(), TimeRemainingColumn(), on=made(err))

    def report(self, item: str, doing: str, done: int, total: int) -> None:
        if self._bar is None:
            return
        if self._all is None:
            self._all = self._bar.add_task(self._description, total=None)
            self._bar.start()
        self._items[item] = (done, total)
        if doing == "done":
            if item in self._rows:
                self._bar.remove_task(self._rows.pop(item))
        elif item not in self._rows:
            self._rows[item] = self._bar.add_task(f"  {item}: {doing}", total=total, completed=done)
        else:
            self._bar.update(self._rows[item], description=f"  {item}: {doing}", completed=done)
        finished = sum(d == t for d, t in self._items.values())
        self._bar.update(
            self._all,
            description=f"{self._description}: {finished}/{len(self._items)} done",
            total=sum(t for _, t in self._items.values()),
            completed=sum(d for d, _ in self._items.values()),
        )

    def done(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> PerItem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.done()
