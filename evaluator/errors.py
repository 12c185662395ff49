"""The evaluator's exceptions. Each also subclasses the core's InputError (exit 2) or DataError (exit 1)."""

from __future__ import annotations

from typing import Any

from recorder.errors import DataError, InputError, RecorderError


class EvalError(RecorderError):
    """Base of every error the evaluator raises on purpose."""


class OrderError(EvalError, InputError):
    """An --order that is not ascending, descending or a list of committed checkpoint steps."""


class NotEvaluableError(EvalError, InputError):
    """A run the evaluator cannot start on: no run_opened, training not stopped, no checkpoints."""


class EvaluatorBusyError(EvalError, InputError):
    """Another evaluator session holds the run's lock: two at once would score the same steps twice."""


class SettingsError(EvalError, InputError):
    """An evaluation setting (k, temperature, batch size, tolerance) that is missing or out of range."""


class SeriesError(EvalError, DataError):
    """Committed checkpoints that do not start at the validation start or have a gap."""


class CheckpointRefused(EvalError, DataError):
    """One checkpoint that must not be scored; recorded as eval_failed with this class's name."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = details or {}  # added to the eval_failed event's data


class UnsafePathError(CheckpointRefused):
    """A checkpoint path that is absolute or resolves outside the run directory."""


class MissingCheckpointError(CheckpointRefused):
    """A committed checkpoint whose directory or weights file is gone."""


class HashMismatchError(CheckpointRefused):
    """A weights file whose sha256 differs from the one training recorded."""


class FingerprintMismatchError(CheckpointRefused):
    """Weights, tokenizer or code that give another fingerprint than training recorded."""


class UnloadableCheckpointError(CheckpointRefused):
    """A checkpoint the loader refuses: pickled weights only, no config.json or tokenizer, a broken index."""


class EvaluationCrashed(CheckpointRefused):
    """Scoring raised an unexpected error (a worker died, the model failed)."""


class CommandFailed(CheckpointRefused):
    """The submitter's evaluation command exited non-zero, or wrote no valid result JSON."""


class EvaluationsFailed(EvalError, DataError):
    """At least one evaluation of this session failed (each one is an eval_failed event)."""


class NothingPassedError(EvalError, DataError):
    """Every checkpoint was evaluated and none reached the target."""


class RunNotWritableError(EvalError, DataError):
    """The run directory cannot be written (read-only filesystem, no permission): nothing is recorded."""


class UnverifiedRunError(EvalError, DataError):
    """The run fails `recorder verify`: its checkpoints are not evaluated unless forced."""


class NothingToAuditError(EvalError, InputError):
    """A run with no scored evaluation, or --steps naming a step that was never scored: nothing to re-check."""


class MissingEvidenceError(EvalError, DataError):
    """A recorded evaluation whose results.json or checkpoint cannot be re-checked (absent, or not the recorded one)."""


class AuditFailed(EvalError, DataError):
    """At least one audited evaluation was not reproduced bit for bit."""


class RayStartError(EvalError, InputError):
    """Ray could not start a local cluster or join the one at --ray-address: the cause and the ways out."""


class EvaluationsInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a session: `steps` were being evaluated and each is recorded as interrupted."""

    def __init__(self, steps: list[int]) -> None:
        super().__init__(steps)
        self.steps = steps
