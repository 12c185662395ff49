"""`from recorder.compat import mllog` stands in for `from mlperf_logging import mllog` in a trainer.

Kept as a re-export of `recorder.adapters.mllog`, because users write this line in their trainers.
"""

from recorder.adapters import mllog
from recorder.adapters.errors import (
    AdapterError,
    ConfigConflictError,
    LogEncodeError,
    MetadataTypeError,
    NotConfiguredError,
)

__all__ = ["mllog", "AdapterError", "ConfigConflictError", "LogEncodeError", "MetadataTypeError", "NotConfiguredError"]
