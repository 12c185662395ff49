"""`derived/scores.jsonl`: every interpretation's result for one run, for the history views.

One JSON object a line: run_id, ruleset, interpretation, status (success | aborted | none), passing_step,
run_start_ns, run_stop_ns, minutes, checker (the compliance checker's verdict, or null), mlperf_logging_version,
why (the interpretation's reason, or why nothing was derived), target (the pass target the run recorded and
its evaluations were judged by; null: it recorded none, the ruleset's applies) and comparable (false when
the run does not compare with MLPerf results, recorder.comparability: another target, an evaluation that is
not the benchmark's; or when it was resumed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from recorder.derived_state import Claim, Heads, claim, record_derived
from recorder.rules import BENCHMARK
from recorder.store.events import Event
from recorder.store.reader import read_run, recorded_run_id
from recorder.store.run import RunDir, derived_dir, write_derived
from replay.checkers.check import CheckResult, compliance_lines, mlperf_logging_version
from replay.derive import Derivation, derive_from
from replay.errors import NoCheckpointError, ReplayError
from replay.interpretations import INTERPRETATIONS
from replay.rulesets import KnownRuleset, ruleset_for_run
from replay.run_scan import RunScan, scan_run
from replay.source import InMemory
from replay.timeline import Timeline

SCORES_FILE = "scores.jsonl"


Outcome = tuple[Derivation, CheckResult | None]  # a derivation already made, and its checker verdict


def score_row(
    events: list[Event],
    run_id: str,
    ruleset: KnownRuleset,
    interpretation: str,
    check: bool = True,
    done: Outcome | None = None,
) -> dict[str, Any]:
    """One interpretation's row; an interpretation that derives nothing gives status 'none' and says why.
    `done`: the derivation (and verdict) the caller already has, so that nothing is derived or checked twice."""
    return scan_row(scan_run(InMemory(events), keep_events=True), run_id, ruleset, interpretation, check, done)


def scan_row(
    scan: RunScan,
    run_id: str,
    ruleset: KnownRuleset,
    interpretation: str,
    check: bool = True,
    done: Outcome | None = None,
) -> dict[str, Any]:
    """`score_row` from one pass over a run (replay.run_scan): its events are not held."""
    judged = _judged(scan.target, scan.not_comparable is None, bool(scan.resumed))
    derive = partial(derive_from, scan.timeline, scan.source, ruleset, interpretation)
    return _row(run_id, ruleset, interpretation, derive, judged, check, done)


def _judged(target: float | None, comparable: bool, resumed: bool) -> dict[str, Any]:
    return {"target": target, "comparable": comparable and not resumed}


def _row(
    run_id: str,
    ruleset: KnownRuleset,
    interpretation: str,
    derive: Callable[[], Derivation],
    judged: dict[str, Any],
    check: bool,
    done: Outcome | None,
) -> dict[str, Any]:
    try:
        d: Derivation = done[0] if done is not None else derive()
    except ReplayError as e:
        return {
            "run_id": run_id,
            "ruleset": ruleset.name,
            "interpretation": interpretation,
            "status": NoCheckpointError.status if isinstance(e, NoCheckpointError) else "none",
            "passing_step": None,
            "run_start_ns": None,
            "run_stop_ns": None,
            "minutes": None,
            "checker": None,
            "mlperf_logging_version": mlperf_logging_version(),
            "why": str(e),
        } | judged
    verdict = (
        done[1] if done is not None and done[1] is not None else (compliance_lines(d.lines, ruleset) if check else None)
    )
    return {
        "run_id": run_id,
        "ruleset": ruleset.name,
        "interpretation": interpretation,
        "status": d.status,
        "passing_step": d.passing_step,
        "run_start_ns": d.run_start_ns,
        "run_stop_ns": d.run_stop_ns,
        "minutes": d.minutes,
        "checker": verdict.summary() if verdict is not None else None,
        "mlperf_logging_version": mlperf_logging_version(),
        "why": d.why,
    } | judged


def applicable_to(tl: Timeline, flag: KnownRuleset | None) -> tuple[KnownRuleset, list[str]]:
    """The ruleset a run is scored under (`ruleset_for_run`: refuses before anything is written) and the
    interpretations that apply to it: all of them where the offline rule applies, else as-recorded only.
    `flag`: the ruleset the user typed (None: the run's own)."""
    known = ruleset_for_run(flag, tl.ruleset, tl.benchmark, tl.division, lenient=flag is None)
    return known, interpretations_under(known, tl)


def interpretations_under(known: KnownRuleset, tl: Timeline) -> list[str]:
    """The interpretations that apply to a run under ruleset `known`."""
    offline = known.offline_evaluation(tl.benchmark or BENCHMARK)
    return [n for n, i in INTERPRETATIONS.items() if offline or i.policy is None]


def compute_scores(
    run_dir: Path | str | RunDir,
    ruleset: KnownRuleset | None = None,
    check: bool = True,
    done: Mapping[str, Outcome] | None = None,
    events: list[Event] | None = None,
    scan: RunScan | None = None,
) -> list[dict[str, Any]]:
    """Every applicable interpretation's row. `ruleset`: the ruleset the run is scored under, as the caller
    resolved it (replay.rulesets.ruleset_for_run: passed on, never looked up again); None: the run's own. `events`
    (in memory) or `scan` (one pass over a streamed run): what the caller already read, so that the run is
    not read twice. Each interpretation's log is checked as it is written to the checker's file."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    if scan is None:
        events = events if events is not None else read_run(run).events
        scan = scan_run(InMemory(events), keep_events=True)
    known = ruleset if ruleset is not None else applicable_to(scan.timeline, None)[0]
    done = done or {}
    run_id = scan.run_id or recorded_run_id(run)
    return [scan_row(scan, run_id, known, i, check, done.get(i)) for i in interpretations_under(known, scan.timeline)]


def write_rows(run: RunDir, rows: list[dict[str, Any]], heads: Heads) -> Path:
    """Rewrite derived/scores.jsonl atomically (temporary file, fsync, rename; never through a symlink), and
    record in derived/state.json that it was derived from the events whose heads are `heads` (the scan's)."""
    path = derived_dir(run) / SCORES_FILE
    write_derived(path, "".join(json.dumps(row, sort_keys=False) + "\n" for row in rows).encode())
    rulesets = sorted({str(row.get("ruleset")) for row in rows})
    record_derived(run, SCORES_FILE, heads, mlperf_logging=mlperf_logging_version(), rulesets=rulesets)
    return path


def scores_claim(run: RunDir, heads: Heads) -> Claim:
    """Whether the run's scores file claims the events whose heads are `heads` (recorder.derived_state)."""
    return claim(run, SCORES_FILE, heads, mlperf_logging=mlperf_logging_version())


def write_scores(run_dir: Path | str | RunDir, ruleset: KnownRuleset | None = None, check: bool = True) -> Path:
    """Compute every applicable interpretation of a run (under its own ruleset unless one is given) and write
    `<run>/derived/scores.jsonl`; returns its path."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    scan = scan_run(InMemory(read_run(run).events), keep_events=True)
    return write_rows(run, compute_scores(run, ruleset, check, scan=scan), scan.heads)
