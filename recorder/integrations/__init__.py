"""Callbacks that record runs of other trainers as events (`recorder.integrations.trl`: Hugging Face / TRL)."""

from recorder.errors import InputError


class IntegrationError(InputError):
    """Base of the errors an integration raises on purpose."""


class MissingWeightsError(IntegrationError):
    """A saved checkpoint without a safetensors weights file to hash."""
