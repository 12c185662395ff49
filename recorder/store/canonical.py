"""Canonical JSON: one spelling per value, so that digests and derived logs are reproducible."""

import json
import math
from typing import Any

from recorder.errors import EncodeError


def _finite(obj: Any) -> Any:
    # JSON has no NaN or Infinity; a diverged loss must still be recordable, so they become strings.
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


# Built once: `json.dumps` with options builds this same encoder on every call, a visible cost per event.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dumps(obj: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept, non-finite floats as strings."""
    try:
        return _ENCODER.encode(obj)
    except ValueError:
        return dumps(_finite(obj))
    except TypeError as e:
        raise EncodeError(f"not JSON-serializable: {e}") from e


def loads(text: str) -> Any:
    return json.loads(text)
