"""The core's exceptions. The CLI maps them to exit codes: 1 when the data says no, 2 for bad input."""

from typing import Any


class RecorderError(Exception):
    """Base of every error this project raises on purpose."""

    exit_code = 2


class InputError(RecorderError):
    """The user gave something unusable (a path, an option, a config value)."""

    exit_code = 2


class DataError(RecorderError):
    """The data says no: a check failed, something was altered, nothing passed."""

    exit_code = 1


class NotARunError(InputError):
    """A path that is not a run directory."""


class RunExistsError(InputError):
    """A run id that is already taken under the root."""


class UnknownKindError(InputError):
    """An event kind that the catalogue does not list."""


class EncodeError(InputError):
    """An event field that cannot be encoded (not JSON, wrong type)."""


class SegmentError(DataError):
    """A segment that cannot be read past some point for a reason other than a torn tail."""

    def __init__(self, message: str, *, segment: str = "", seq: int | None = None) -> None:
        super().__init__(message)
        self.segment = segment
        self.seq = seq
        self.partial: Any = None  # the readable prefix (a reader.Segment), for verify to look further back


class EventDecodeError(DataError):
    """An event whose stored JSON does not parse: the segment was altered after it was written."""


class NewerSchemaError(InputError):
    """A segment written with a newer event schema than this recorder knows."""


class LogWriteError(RecorderError):
    """The operating system refused a write or fsync (disk full, read-only, I/O error)."""

    exit_code = 1


class WriterClosedError(RecorderError):
    """An append to a writer that was closed."""


class UnsafeWriteError(InputError):
    """A write that would follow a symlink (or a non-directory) out of the run directory."""
