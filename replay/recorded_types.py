"""The types an imported log's values must have for its lines to mean what the checker reads them as.

mlperf-logging's checkers compare values with Python operators and never check their types: `true > 0.69`
holds (a bool is the integer 1), and `float(true)` is 1.0 ms. So a failing log whose `eval_accuracy`
values are rewritten to `true` passes the compliance checker, and replaying it as recorded would call it a
success. Replay checks these types before it gives any verdict on the lines as they are.

An accuracy has the shape the checker's rule file for the log's benchmark and ruleset compares
(replay.accuracy_shapes): one number, or for maskrcnn a dict whose `BBOX` and `SEGM` are numbers.
"""

from __future__ import annotations

from collections.abc import Iterable

from recorder.rules import finite_score
from replay.accuracy_shapes import Fields
from replay.mllog_format import ParsedLine, parse_line
from replay.rulesets import KnownRuleset

# key -> what its `value` must be (eval_accuracy: see accuracy_problem)
NUMBER_VALUES = frozenset({"target_accuracy"})
INTEGER_VALUES = frozenset({"global_batch_size"})
# real logs state these as floats too (samples_count 1152.0, epoch_num 0.05): numbers, not bools
NUMBER_METADATA = ("samples_count", "epoch_num")


def _is_number(v: object) -> bool:
    return finite_score(v) is not None


def _is_integer(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def accuracy_problem(value: object, fields: Fields) -> str | None:
    """Why an `eval_accuracy` value is not what the checker compares (`fields`: accuracy_shapes), or None."""
    if not fields:
        return None if _is_number(value) else f"eval_accuracy {_shown(value)} is not a finite number"
    if not isinstance(value, dict):
        return f"eval_accuracy {_shown(value)} is not an object of {', '.join(fields)}"
    for name in fields:
        if not _is_number(value.get(name)):
            return f"eval_accuracy {name} {_shown(value.get(name))} is not a finite number"
    return None


def type_problem(p: ParsedLine, fields: Fields | None = ()) -> str | None:
    """What is mistyped in one parsed line, or None (`fields`: the benchmark's accuracy shape; None: its
    accuracy is judged elsewhere)."""
    if p.record is None:
        return None  # malformed JSON is the checker's to refuse
    key, value = p.key, p.get("value")
    if "time_ms" in p.record and not _is_number(p.get("time_ms")):
        return f"time_ms {_shown(p.get('time_ms'))} is not a number"
    if key == "eval_accuracy" and fields is not None and (why := accuracy_problem(value, fields)) is not None:
        return why
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


def first_type_problem(lines: Iterable[str], ruleset: KnownRuleset) -> str | None:
    """'line N: ...' for the first mistyped line (N counts from 1, as the log's lines), or None. Accuracies
    are read as the log's benchmark logs them under `ruleset`; one logged before the log names its benchmark
    is judged once the benchmark is known (the checker reads the whole log before it judges a line)."""
    benchmark: str | None = None
    division: str | None = None
    early: list[tuple[int, ParsedLine]] = []  # accuracies before submission_benchmark
    for number, text in enumerate(lines, 1):
        parsed = parse_line(text)
        if parsed is None:
            continue
        if parsed.key == "submission_benchmark" and benchmark is None and isinstance(parsed.get("value"), str):
            benchmark = parsed.get("value")
            why = _first_early(early, ruleset.accuracy_fields(division, benchmark))
            if why is not None:
                return why
            early = []
        elif parsed.key == "submission_division" and isinstance(parsed.get("value"), str):
            division = parsed.get("value")
        if parsed.key == "eval_accuracy" and benchmark is None:
            early.append((number, parsed))
        why = type_problem(parsed, None if benchmark is None else ruleset.accuracy_fields(division, benchmark))
        if why is not None:
            return f"line {number}: {why}"
    return _first_early(early, ())


def _first_early(early: list[tuple[int, ParsedLine]], fields: Fields) -> str | None:
    for number, parsed in early:
        why = accuracy_problem(parsed.get("value"), fields)
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
