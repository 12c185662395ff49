"""The trainer's exceptions: one base, small subclasses. The CLI maps them to exit codes."""

from __future__ import annotations

from recorder.errors import DataError, InputError, RecorderError
from trainer.policy.errors import CheckpointError, TokenizerError

__all__ = ["CheckpointError", "ConfigError", "TokenizerError", "TrainerError", "TrainingFailed"]


class TrainerError(RecorderError):
    """Base of every error the trainer raises on purpose."""


class ConfigError(TrainerError, InputError):
    """One or more invalid config values; `errors` lists each as 'field: problem; fix'."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        if len(errors) == 1:  # one problem, one line
            super().__init__(errors[0])
        else:
            super().__init__(f"{len(errors)} invalid config value(s):\n  " + "\n  ".join(errors))


class TrainingFailed(TrainerError, DataError):
    """Training ended early; the run's train_stop event names the reason."""
