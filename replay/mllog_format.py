"""The mllog line format, exactly as mlperf-logging's `mllog._encode_log` writes it, and its parsing.

`:::MLLOG {"namespace", "time_ms", "event_type", "key", "value", "metadata"}` in that order, Python's
default `json.dumps` separators and ASCII escaping (tests/replay/test_checkers.py compares against
`_encode_log` itself).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mlperf_logging.mllog import constants as C

TOKEN = ":::MLLOG"
# The longest mllog line replay derives, imports or hands to the compliance checker. The checker's time grows
# with the square of a line's length (one line of 80,000 characters took 18 s on a shared 2-core machine,
# so 1 MB would take most of an hour); a logger's records are a few hundred bytes (the corpus's longest: 359).
LINE_LIMIT = 16 * 1024
# mlperf-logging's parser keeps `re.sub(".*:::MLLOG ", ":::MLLOG ", line)`: the record after the last
# ':::MLLOG ' (with its space) is the line's record, so two records on one line read as the second.
PARSER_TOKEN = TOKEN + " "
POINT_IN_TIME = C.POINT_IN_TIME
INTERVAL_START = C.INTERVAL_START
INTERVAL_END = C.INTERVAL_END


def encode_line(
    time_ms: int, event_type: str, key: str, value: Any, metadata: dict[str, Any], namespace: str = ""
) -> str:
    """One log line, byte for byte what `mllog._encode_log` produces for the same arguments."""
    record = {
        "namespace": namespace,
        "time_ms": time_ms,
        "event_type": event_type,
        "key": key,
        "value": value,
        "metadata": metadata,
    }
    return f"{TOKEN} {json.dumps(record)}"


def ns_to_ms(time_ns: int) -> int:
    """Milliseconds since the epoch, truncated, as mllog's `int(time.time() * 1e3)` does."""
    return time_ns // 1_000_000


@dataclass(frozen=True)
class ParsedLine:
    """One line holding ':::MLLOG': its prefix, its fields, or why its JSON did not parse."""

    text: str  # the verbatim line, prefix included, without the line ending
    prefix: str
    record: dict[str, Any] | None
    error: str | None

    def get(self, field: str) -> Any:
        return None if self.record is None else self.record.get(field)

    @property
    def key(self) -> str | None:
        key = self.get("key")
        return key if isinstance(key, str) else None

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def time_ms(self) -> int | float | None:
        t = self.get("time_ms")
        return t if isinstance(t, (int, float)) and not isinstance(t, bool) else None

    @property
    def parser_time_ms(self) -> float | None:
        """time_ms as mlperf-logging's parser reads it (`float(m['time_ms'])`), None where that fails."""
        try:
            return float(self.get("time_ms"))
        except (TypeError, ValueError):
            return None

    @property
    def records(self) -> int:
        """How many records the line holds; the parser reads only the last."""
        return max(1, self.text.count(PARSER_TOKEN))


def parse_line(text: str) -> ParsedLine | None:
    """Parse a line; None when it holds no ':::MLLOG'. Malformed JSON is kept with its error."""
    at = text.rfind(PARSER_TOKEN)
    if at < 0:
        at = text.find(TOKEN)
    if at < 0:
        return None
    body = text[at + len(TOKEN) :].strip()
    try:
        record = json.loads(body)
    except json.JSONDecodeError as e:
        return ParsedLine(text, text[:at], None, f"malformed JSON: {e.msg} at column {e.colno}")
    except RecursionError:
        return ParsedLine(text, text[:at], None, "malformed JSON: nested deeper than Python parses")
    if not isinstance(record, dict):
        return ParsedLine(text, text[:at], None, f"malformed record: a JSON {type(record).__name__}, not an object")
    return ParsedLine(text, text[:at], record, None)
