"""Errors the adapters raise on purpose: the mllog drop-in and the callbacks for other trainers."""

from recorder.errors import InputError


class AdapterError(InputError):
    """Base of the errors an adapter raises on purpose."""


class NotConfiguredError(AdapterError):
    """A log call before the drop-in knows which run directory to record into."""


class LogEncodeError(AdapterError):
    """A value or metadata that mllog could not encode as JSON (mllog itself would drop the line)."""


class MetadataTypeError(AdapterError):
    """Metadata that is not a dict (mllog itself would drop it with a warning)."""


class ConfigConflictError(AdapterError):
    """Configuration options that contradict each other."""


class MissingWeightsError(AdapterError):
    """A saved checkpoint without a safetensors weights file to hash."""
