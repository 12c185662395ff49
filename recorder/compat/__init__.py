"""Drop-ins for libraries that trainers already call, so that their runs become event logs unchanged.

`recorder.compat.mllog` stands in for `mlperf_logging.mllog`.
"""

from recorder.errors import InputError


class CompatError(InputError):
    """Base of the errors a drop-in raises on purpose."""


class NotConfiguredError(CompatError):
    """A log call before the drop-in knows which run directory to record into."""


class LogEncodeError(CompatError):
    """A value or metadata that mllog could not encode as JSON (mllog itself would drop the line)."""


class MetadataTypeError(CompatError):
    """Metadata that is not a dict (mllog itself would drop it with a warning)."""


class ConfigConflictError(CompatError):
    """Configuration options that contradict each other."""
