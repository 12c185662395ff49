"""The harness's exceptions, under the evaluator's base (EvalError) and the core's exit codes."""

from __future__ import annotations

from evaluator.errors import EvalError
from recorder.errors import InputError


class HarnessError(EvalError):
    """Base of every error the harness path raises on purpose."""


class UnknownTaskError(HarnessError, InputError):
    """A --tasks name this project ships no task config for."""


class MissingTaskDataError(HarnessError, InputError):
    """No data directory, or no data file for a task in it (no hub is reachable: data must be local)."""


class TaskDataError(HarnessError, InputError):
    """A task's data file that is not plain rows: unreadable, a key given twice, a lone surrogate, a FIFO."""


class HarnessUnavailableError(HarnessError, InputError):
    """lm-eval is not installed (the `harness` extra)."""


class HarnessOptionsError(HarnessError, InputError):
    """Options that make no sense with --harness (or --tasks/--steps/--data-dir without it)."""


class TaskPinsError(HarnessError, InputError):
    """The file RECORDER_TASK_PINS names cannot be read, or a line of it is not `TASK VERSION SHA256`."""
