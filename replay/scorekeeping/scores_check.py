"""`derived/scores.jsonl` checked against what the events derive: a cache is shown only when it agrees.

Anything under `derived/` can be edited by whoever can write the run, and the history's views show
`scores.jsonl` as it is. So `recorder verify` re-derives every row of it (rule `derived-scores`), and
`recorder report` and `recorder runs` re-derive what they show within one budget (`RecheckBudget`). The
compared columns are the facts a derivation fixes: status, passing step, run_start and run_stop times,
minutes, target and comparability. The compliance checker's verdict (`checker`) is not re-run here
(`recorder replay --check` does), nor are the texts (`why`) that name the reasons.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recorder.store.events import Event
from recorder.store.reader import recorded_run_id
from recorder.store.run import RunDir
from recorder.untrusted.untrusted_files import is_regular
from recorder.verify.problem import Problem
from replay.errors import ReplayError
from replay.rulesets import get_known
from replay.run_scan import RunScan, scan_run
from replay.scorekeeping.scores import SCORES_FILE, scan_row, scores_claim
from replay.source import InMemory

RULE = "derived-scores"
FACTS = ("run_id", "ruleset", "interpretation", "status", "passing_step", "run_start_ns", "run_stop_ns")
FACTS_NUMBERS = ("minutes", "target")
SCORES_LIMIT = 16 * 1024 * 1024  # a scores file is a few hundred bytes per interpretation
# The one rule for what a command that shows scores.jsonl (`recorder report`, `recorder runs`) does with it:
# re-derive it from the events while the events it reads for that stay within this many in all, one command
# at a time; past it, show the file as written and say so (flag `unchecked`). Reading and re-deriving runs at
# about 20,000 events per CPU second (bench/recheck.py: 17,500 to 22,000), so this is about 5 s: a listing
# stays a listing, and a million-event run's report keeps its 5 s target. `recorder verify` re-derives every
# row, whatever the size.
RECHECK_EVENTS = 100_000


@dataclass(frozen=True)
class ScoreMismatch:
    """A row of scores.jsonl that is not what the events derive."""

    line_no: int
    interpretation: str
    message: str

    def problem(self) -> Problem:
        return Problem(
            f"derived/{SCORES_FILE}", None, f"line {self.line_no} ({self.interpretation}): {self.message}", RULE
        )


class RecheckBudget:
    """The events one command may still read to re-derive the scores files it shows (RECHECK_EVENTS in all)."""

    def __init__(self) -> None:
        self.left = RECHECK_EVENTS

    def take(self, events: int) -> bool:
        """Whether a run of `events` events is re-derived (and charged to the budget) or shown as written."""
        if events > self.left:
            return False
        self.left -= events
        return True


def not_rechecked(events: int) -> str:
    """Why a run's scores file is shown as written: the budget was spent (see RECHECK_EVENTS)."""
    return (
        f"derived/{SCORES_FILE} is shown as written, not re-derived from the run's {events:,} events (a command "
        f"re-derives at most {RECHECK_EVENTS:,} events in all); `recorder verify` re-derives every row"
    )


def recorded_rows(run: RunDir) -> list[tuple[int, Any]] | ScoreMismatch:
    """(line number, parsed JSON) of each non-empty line, or why the file cannot be read as scores."""
    path = run.derived / SCORES_FILE
    if not is_regular(path) or path.stat().st_size > SCORES_LIMIT:
        return ScoreMismatch(0, "-", f"not a regular file of at most {SCORES_LIMIT} bytes")
    out = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if line.strip():
            try:
                out.append((line_no, json.loads(line)))
            except (ValueError, RecursionError):  # RecursionError: nested deeper than Python parses
                return ScoreMismatch(line_no, "-", "not JSON")
    return out


Facts = Sequence[Event] | RunScan  # the events in memory, or one pass over a streamed run


def _scanned(facts: Facts) -> RunScan:
    return facts if isinstance(facts, RunScan) else scan_run(InMemory(facts), keep_events=True)


def check_scores(run: RunDir, events: Facts, interpretations: Sequence[str] | None = None) -> list[ScoreMismatch]:
    """Every row of the run's scores.jsonl (or those of `interpretations`) against a fresh derivation from
    `events` (a list, or a RunScan of a streamed run); empty when the file is absent or agrees. A file
    derived from other events (stale: `scores_claim`) is not checked here: callers say it is stale."""
    if not (run.derived / SCORES_FILE).exists():
        return []
    rows = recorded_rows(run)
    if isinstance(rows, ScoreMismatch):
        return [rows]
    if not rows:
        return []
    scan = _scanned(events)  # one pass over the run for every row
    out = []
    for line_no, row in rows:
        if not isinstance(row, dict):
            out.append(ScoreMismatch(line_no, "-", "not a JSON object"))
            continue
        interpretation = str(row.get("interpretation"))
        if interpretations is not None and interpretation not in interpretations:
            continue
        message = _disagreement(row, scan, run)
        if message is not None:
            out.append(ScoreMismatch(line_no, interpretation, message))
    return out


def derived_row(row: dict[str, Any], events: Facts, run: RunDir) -> dict[str, Any] | str:
    """What the events derive for a recorded row's ruleset and interpretation (no checker), or why not."""
    ruleset, interpretation = row.get("ruleset"), row.get("interpretation")
    if not isinstance(ruleset, str) or not isinstance(interpretation, str):
        return "names no ruleset or interpretation"
    try:
        known = get_known(ruleset)
        scan = _scanned(events)
        return scan_row(scan, scan.run_id or recorded_run_id(run), known, interpretation, check=False)
    except ReplayError as e:
        return f"cannot be derived ({e})"


def _disagreement(row: dict[str, Any], events: RunScan, run: RunDir) -> str | None:
    fresh = derived_row(row, events, run)
    if isinstance(fresh, str):
        return fresh
    for key in FACTS:
        if row.get(key) != fresh.get(key):
            return f"{key} {row.get(key)!r}, the events derive {fresh.get(key)!r}"
    for key in FACTS_NUMBERS:
        if not _same(row.get(key), fresh.get(key)):
            return f"{key} {row.get(key)!r}, the events derive {fresh.get(key)!r}"
    if row.get("comparable") != fresh.get("comparable"):
        return f"comparable {row.get('comparable')!r}, the events derive {fresh.get('comparable')!r}"
    return None


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)


def recheck_shown(
    run: RunDir, events: Facts, interpretation: str
) -> tuple[ScoreMismatch, dict[str, Any]] | dict[str, Any] | None:
    """The row of `interpretation` that a history shows, re-derived: None when it agrees (or there is none),
    the row the events derive when the file is stale (derived from other events: no disagreement, a cache
    to refresh), else the disagreement and the row the events derive (its facts None where nothing can be
    derived)."""
    events = _scanned(events)
    if scores_claim(run, events.heads) == "stale":
        rows = recorded_rows(run)
        objects = [] if isinstance(rows, ScoreMismatch) else [r for _, r in rows if isinstance(r, dict)]
        row = next((r for r in objects if r.get("interpretation") == interpretation), None)
        fresh = derived_row(row, events, run) if row is not None else "no row"
        return fresh if isinstance(fresh, dict) else {}
    mismatches = check_scores(run, events, [interpretation])
    if not mismatches:
        return None
    rows = recorded_rows(run)
    if isinstance(rows, ScoreMismatch):  # the file as a whole is unreadable: nothing to re-derive from
        return mismatches[0], {}
    recorded = next((r for _, r in rows if isinstance(r, dict) and r.get("interpretation") == interpretation), None)
    fresh = derived_row(recorded, events, run) if recorded is not None else "no row"
    return mismatches[0], fresh if isinstance(fresh, dict) else {}
