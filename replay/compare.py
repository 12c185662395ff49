"""The interpretations table: every reading of the rule side by side, as `recorder replay --compare`
prints it and `recorder report` shows it. One formatter, so the two can never disagree on a number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COLUMNS = ("interpretation", "status", "step", "stop_s", "minutes", "delta", "checker")


@dataclass(frozen=True)
class CompareTable:
    """Rows of text cells (COLUMNS), the legend line, and notes saying why a row scored nothing or failed."""

    title: str
    rows: list[tuple[str, ...]]
    legend: str
    notes: list[str]
    unverified: bool
    resumed: bool


def minutes_text(m: float | None) -> str:
    return "-" if m is None else f"{m:.3f}"


def _shorten(reasons: str, keep: int = 3) -> str:
    parts = reasons.split("; ")
    return "; ".join(parts[:keep]) + (f"; ... and {len(parts) - keep} more" if len(parts) > keep else "")


def compare_table(rows: list[dict[str, Any]]) -> CompareTable:
    """The table of a run's score rows (replay.scorekeeping.scores' format, marked by
    replay.checkers.preflight.mark_rows)."""
    official = next((r for r in rows if r["interpretation"] == "official"), None)
    base = official["minutes"] if official else None
    cells: list[tuple[str, ...]] = []
    notes: dict[str, list[str]] = {}
    for r in rows:
        stop = (
            f"{(r['run_stop_ns'] - r['run_start_ns']) / 1e9:.3f}"
            if r["run_stop_ns"] is not None and r["run_start_ns"] is not None
            else "-"
        )
        delta = f"{r['minutes'] - base:+.3f}" if r["minutes"] is not None and base is not None else "-"
        verdict = "PASSED" if r["checker"] and r["checker"].endswith("PASSED") else ("FAILED" if r["checker"] else "-")
        if r.get("verified") is False:
            verdict += " UNVERIFIED"
        if r.get("resumed"):
            verdict += " RESUMED"
        elif r.get("comparable") is False:  # judged by a target other than the ruleset's
            verdict += " NOT COMPARABLE"
        step = str(r["passing_step"] if r["passing_step"] is not None else "-")
        cells.append((r["interpretation"], r["status"], step, stop, minutes_text(r["minutes"]), delta, verdict))
        if r["status"] == "none":
            notes.setdefault(r["why"], []).append(r["interpretation"])
        elif verdict == "FAILED":
            notes.setdefault(_shorten(r["checker"].split("FAILED: ", 1)[-1]), []).append(r["interpretation"])
    first = rows[0]
    unchecked = any(r["checker"] is None and r["status"] != "none" for r in rows)
    return CompareTable(
        title=f"{first['run_id']}: ruleset {first['ruleset']}",
        rows=cells,
        legend=(
            "step: passing step; stop_s: run_stop, seconds after run_start; delta: minutes vs official; checker: "
            f"mlperf-logging {first['mlperf_logging_version']} compliance checker, training {first['ruleset']}"
            + (" (-: not run on that reading; add --check to run it on every row)" if unchecked else "")
        ),
        notes=[f"{', '.join(names)}: {note}" for note, names in notes.items()],
        unverified=any(r.get("verified") is False for r in rows),
        resumed=any(r.get("resumed") for r in rows),
    )
