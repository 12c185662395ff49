"""Replay's exceptions: one base, small subclasses; the CLI maps them to exit codes (1 data, 2 input)."""

from __future__ import annotations

from recorder.errors import DataError, InputError, RecorderError


class ReplayError(RecorderError):
    """Base of every error replay raises on purpose."""


class UnknownRulesetError(ReplayError, InputError):
    """A ruleset or benchmark this replay does not know."""


class UnknownBenchmarkError(ReplayError, InputError):
    """A benchmark that the ruleset the user typed does not know."""


class RulesetMismatchError(ReplayError, DataError):
    """A run whose recorded ruleset does not know its benchmark, or a rule that does not apply to it."""


class InterpretationNotApplicableError(ReplayError, InputError):
    """An offline-evaluation interpretation asked of a run the 6.1 offline rule does not cover."""


class ScoreInputError(ReplayError, InputError):
    """Runs given to `score` together that cannot be one set (different rulesets, benchmarks, scaling)."""


class UnknownInterpretationError(ReplayError, InputError):
    """An interpretation name that is not in the registry."""


class MissingFactError(ReplayError, DataError):
    """A fact the derivation needs is not among the events (no run_start, no weight update, ...)."""


class NotEvaluatedError(ReplayError, DataError):
    """Checkpoints not yet evaluated and none passing: no run_stop may be fabricated."""


class DuplicateResultError(ReplayError, DataError):
    """Two benchmark results for the same checkpoint step, or a result that is not a number."""


class NothingToEmitError(ReplayError, DataError):
    """The interpretation has nothing it may emit for this run (it says why)."""


class ImportFileError(ReplayError, InputError):
    """An mllog file that cannot be imported (missing, unreadable, no ':::MLLOG' line)."""


class ReplayOutputError(ReplayError, InputError):
    """An output file (`replay -o`) that cannot be written: a read-only mount, a full disk."""


class UnverifiedRunError(ReplayError, DataError):
    """The run fails `recorder verify`: nothing is derived from it unless forced."""


class NoCheckpointError(ReplayError, DataError):
    """A recorded run that stopped before its first checkpoint: nothing can be evaluated, no minutes exist."""

    status = "no checkpoint"


class LineTooLongError(ReplayError, DataError):
    """A fact that would make an mllog line longer than the compliance checker reads in reasonable time."""
