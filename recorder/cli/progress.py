"""Progress on a terminal for work that takes more than a moment; nothing of it on a pipe or in a file.

A bar says what is being done, how much of it is done and how much is left (count or bytes, elapsed and
remaining time); it draws on stderr, is erased when the work ends, and never reaches a script's output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

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

from recorder.cli.output import err

Advance = Callable[[int], None]  # how much more is done (items, or bytes)


@contextmanager
def progress(description: str, total: int | None, *, unit: str = "items") -> Iterator[Advance]:
    """A bar of `total` (None: a spinner with the time spent) while the block runs, on a terminal only.
    `unit` "bytes" shows sizes; otherwise "done/total"."""
    if not err.is_terminal:
        yield lambda n: None
        return
    amount = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), amount, TimeElapsedColumn()]
    with Progress(*columns, TimeRemainingColumn(), console=err, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


@contextmanager
def working(description: str) -> Iterator[None]:
    """A spinner with the time spent, for a step whose size is not known in advance (loading a model)."""
    if not err.is_terminal:
        yield
        return
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err, transient=True
    ) as bar:
        bar.add_task(description, total=None)
        yield


class UntilFirst:
    """A spinner from the start of a command until its first result (`done`), for the seconds a command
    spends before it can say anything (verifying the run, loading torch and the model)."""

    def __init__(self, description: str) -> None:
        self._bar: Progress | None = None
        if err.is_terminal:
            self._bar = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err, transient=True
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
