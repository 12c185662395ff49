"""Progress on a terminal for work that takes more than a moment; nothing of it on a pipe or in a file.

A bar says what is being done, how much of it is done and how much is left (count or bytes, elapsed and
remaining time); it is erased when the work ends and never reaches a script's output. It draws through the
console the command prints its results on when that is the terminal, so a line printed while the bar runs
goes above the bar (rich clears and redraws it); on stderr when only stderr is the terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from recorder.cli._output import console, err, made

if TYPE_CHECKING:  # rich loads when a bar is drawn, on a terminal only
    from rich.console import Console
    from rich.progress import Progress, TaskID

Advance = Callable[[int], None]  # how much more is done (items, or bytes)


def _terminal() -> Console:
    return made(console if console.is_terminal else err)


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
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    amount = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), amount, TimeElapsedColumn()]
    with Progress(*columns, TimeRemainingColumn(), console=_terminal(), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


@contextmanager
def working(description: str) -> Iterator[None]:
    """A spinner with the time spent, for a step whose size is not known in advance (loading a model)."""
    if not err.is_terminal:
        yield
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=_terminal(), transient=True
    ) as bar:
        bar.add_task(description, total=None)
        yield


class UntilFirst:
    """A spinner from the start of a command until its first result (`done`), for the seconds a command
    spends before it can say anything (verifying the run, loading torch and the model)."""

    def __init__(self, description: str) -> None:
        self._bar: Progress | None = None
        if err.is_terminal:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=_terminal(),
                transient=True,
            )
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
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
            self._bar = Progress(
                # on stderr: a results table printed meanwhile keeps its own layout (rich folds what it prints
                # through a live display to the display's width)
                *columns,
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=made(err),
                transient=True,
            )

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
