"""The trainer's exceptions: one base, small subclasses. The CLI maps them to exit codes."""

from __future__ import annotations

from recorder.errors import DataError, InputError, RecorderError


class TrainerError(RecorderError):
    """Base of every error the trainer raises on purpose."""


class ConfigError(TrainerError, InputError):
    """One or more invalid config values; `errors` lists each as 'field: problem; fix'."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__(f"{len(errors)} invalid config value(s):\n  " + "\n  ".join(errors))


class TokenizerError(TrainerError, InputError):
    """Text the tokenizer cannot encode, or a tokenizer.json it cannot read."""


class CheckpointError(TrainerError, DataError):
    """A checkpoint that could not be written or read (disk full, permission, missing or altered file)."""


class TrainingFailed(TrainerError, DataError):
    """Training ended early; the run's train_stop event names the reason."""
