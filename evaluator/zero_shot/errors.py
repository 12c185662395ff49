"""The zero-shot command's exceptions, under the evaluator's base and the core's exit codes."""

from __future__ import annotations

from evaluator.errors import EvalError
from recorder.errors import DataError, InputError


class ZeroShotError(EvalError):
    """Base of every error the zero-shot command raises on purpose."""


class ZeroShotInputError(ZeroShotError, InputError):
    """A path, option, training-run config, reference log or task data the command cannot use."""


class HoldoutMismatch(ZeroShotError, DataError):
    """A team's holdout function reports a loss the project's own recomputation of the same weights does not."""


class ZeroShotInterrupted(ZeroShotError):
    """Ctrl-C stopped the command: the message says which checkpoints' results were written and how to go on."""

    exit_code = 130
