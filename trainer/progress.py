"""Progress for `recorder train`: a rich bar on a terminal, one plain line per step otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from trainer.loop import StepResult


def _erased_bar(*columns: Any) -> Any:
    from rich.progress import Progress as Bar

    return Bar(*columns, transient=True)


class Progress:
    """Step, reward, seconds per step and checkpoints written. On a terminal the bar is erased when training
    ends or is interrupted: what the command prints then (its summary, where it stopped) takes its place.
    `bar` makes the rich Progress from its columns (the command line's: drawn on its own consoles)."""

    def __init__(
        self,
        total: int,
        validation_start: int,
        *,
        tty: bool | None = None,
        bar: Callable[..., Any] = _erased_bar,
    ) -> None:
        self.total, self.validation_start = total, validation_start
        self.tty = sys.stderr.isatty() if tty is None else tty
        self._make_bar = bar
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if self.tty:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

            self._bar = self._make_bar(
                TextColumn("train"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
            )
            self._bar.start()
            # until a warm-up batch or step 1 says more: a cached init loads, it is not trained
            self._task = self._bar.add_task("train", total=self.total, info="starting: the model and its init")
        return self

    def warming(self, status: str) -> None:
        """What the warm-up is doing, in the bar's place for the step (nothing on a pipe: the heartbeat says it)."""
        if self._bar is not None:
            self._bar.update(self._task, info=status, refresh=True)  # drawn now, not at the next tick

    def __call__(self, r: StepResult, checkpoints: int) -> None:
        before = r.step < self.validation_start
        if self._bar is not None:  # short enough that the step count and the time keep their place at 80 columns
            saved = f"saves from {self.validation_start}" if before else self.saved(r.step, checkpoints)
            self._bar.update(
                self._task,
                completed=r.step,
                refresh=True,
                info=f"reward {r.reward:.3f}  {r.step_s:.2f} s/step  {saved}",
            )
            return
        info = (
            f"reward {r.reward:.3f}  {r.step_s:.2f} s/step  checkpoints {checkpoints}"
            f"{'  (saving from step ' + str(self.validation_start) + ')' if before else ''}"
        )
        print(f"step {r.step}/{self.total}  {info}", flush=True)

    def saved(self, step: int, checkpoints: int) -> str:
        """Checkpoints committed, and the one still being written: each step from the validation start saves,
        asynchronously, so at its own step a save is under way, not missing."""
        due = step - self.validation_start + 1
        return f"{checkpoints} saved" if checkpoints >= due else f"{checkpoints} saved, saving {step}"

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
