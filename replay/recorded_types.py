"""The types an imported log's values must have for its lines to mean what the checker reads them as.

mlperf-logging's checkers compare values with Python operators and never check their types: `true > 0.69`
holds (a bool is the integer 1), and `float(true)` is 1.0 ms. So a failing log whose `eval_accuracy`
values are rewritten to `true` passes the compliance checker, and replaying it as recorded would call it a
success. Replay checks these types before it gives any verdict on the lines as they are.
"""

from __future__ import annotations

from collections.abc import Iterable

from recorder.rules import finite_score
from replay.mllog_format import ParsedLine, parse_line

# key -> what its `value` must be
NUMBER_VALUES = frozenset({"eval_accuracy", "target_accuracy"})
INTEGER_VALUES = frozenset({"global_batch_size"})
# real logs state these as floats too (samples_count 1152.0, epoch_num 0.05): numbers, not bools
NUMBER_METADATA = ("samples_count", "epoch_num")


def _is_number(v: object) -> bool:
    return finite_score(v) is not None


def _is_integer(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def type_problem(p: ParsedLine) -> str | None:
    """What is mistyped in one parsed line, or None."""
    if p.record is None:
        return None  # malformed JSON is the checker's to refuse
    key, value = p.key, p.get("value")
    if "time_ms" in p.record and not _is_number(p.get("time_ms")):
        return f"time_ms {_shown(p.get('time_ms'))} is not a number"
    if key in NUMBER_VALUES and not _is_number(value):
        return f"{key} {_shown(value)} is not a finite number"
    if key in INTEGER_VALUES and not _is_integer(value):
        return f"{key} {_shown(value)} is not an integer"
    meta = p.metadata
    for name in NUMBER_METADATA:
        if name in meta and not _is_number(meta[name]):
            return f"{key} metadata {name} {_shown(meta[name])} is not a number"
    if key == "run_stop" and not isinstance(meta.get("status"), str):
        return f"run_stop metadata status {_shown(meta.get('status'))} is not a string"
    return None


def first_type_problem(lines: Iterable[str]) -> str | None:
    """'line N: ...' for the first mistyped line (N counts from 1, as the log's lines), or None."""
    for number, text in enumerate(lines, 1):
        parsed = parse_line(text)
        why = type_problem(parsed) if parsed is not None else None
        if why is not None:
            return f"line {number}: {why}"
    return None


def _shown(value: object) -> str:
    import json

    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
