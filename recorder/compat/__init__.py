"""`from recorder.compat import mllog` (or `import recorder.compat.mllog as mllog`) stands in for
`from mlperf_logging import mllog` (`import mlperf_logging.mllog as mllog`) in a trainer.

Kept as a re-export of `recorder.adapters.mllog`, because users write these lines in their trainers.
"""

import sys

from recorder.adapters import mllog
from recorder.adapters.errors import (
    AdapterError,
    ConfigConflictError,
    LogEncodeError,
    MetadataTypeError,
    NotConfiguredError,
)

# The same module object under both names, so that either import spelling shares one logger's state.
sys.modules[f"{__name__}.mllog"] = mllog

__all__ = ["mllog", "AdapterError", "ConfigConflictError", "LogEncodeError", "MetadataTypeError", "NotConfiguredError"]
