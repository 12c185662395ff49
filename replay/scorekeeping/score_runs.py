"""`recorder score`: runs read, grouped into the sets the result summarizer scores, derived, checked, scored.

A set is the runs imported from one result folder (they record it); runs without one are grouped by global
batch size. Every run of a set must share a ruleset, a benchmark and a scaling factor. Each run's
`derived/scores.jsonl` is rewritten on the way, reusing the derivation and verdict made here; nothing is
written for any run until every run's ruleset is settled (an unknown ruleset or benchmark writes nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.comparability import NOT_COMPARABLE
from recorder.store.read_only_runs import writable_run
from recorder.store.reader import recorded_run_id
from recorder.store.run import RunDir
from recorder.verify import VerifyReport
from recorder.verify.proof import proven_by
from replay.checkers.check import CheckResult, compliance_lines, rcp
from replay.checkers.preflight import UNTRUSTED, UNVERIFIED, mark_rows, verified
from replay.derive import Derivation, derive_from
from replay.errors import ReplayError, ScoreInputError
from replay.interpretations import AS_RECORDED, canonical_name
from replay.rulesets import KnownRuleset, get_known, ruleset_for_run
from replay.run_scan import RunScan, scan_verified
from replay.scorekeeping.scores import Outcome, compute_scores, write_rows
from replay.scorekeeping.set_score import RunOutcome, SetScore, score_set
from replay.timeline import Timeline


@dataclass
class _Run:
    run: RunDir
    scan: RunScan  # one pass over its events: streamed when intact, else read whole (replay.run_scan)
    known: KnownRuleset
    unverified: list[str]
    label: str
    interpretation: str
    untrusted: list[str]  # trust problems judged past with --untrusted-ok
    report: VerifyReport  # what the verdict rests on (recorder.verify.proof)
    notes: list[str]  # said before the set's table (where a read-only run's derived files went)

    @property
    def tl(self) -> Timeline:
        return self.scan.timeline

    @property
    def opened(self) -> dict[str, Any]:
        return self.scan.opened

    @property
    def set_key(self) -> tuple[str | None, int | None]:
        folder = self.opened.get("result_set")
        return (str(folder), None) if folder else (None, self.tl.global_batch_size)

    @property
    def scaling_factor(self) -> float:
        factor = self.opened.get("scaling_factor")
        return float(factor) if isinstance(factor, (int, float)) and not isinstance(factor, bool) else 1.0


def _open(run_dir: Path, ruleset: KnownRuleset | None, interpretation: str | None, force: bool) -> _Run:
    unverified, report = verified(run_dir, force)  # refuses (exit 1) unless --force
    run, elsewhere = writable_run(RunDir.open(run_dir))  # a read-only run's caches go to a temporary folder
    scan = scan_verified(report)[0]
    tl = scan.timeline
    known = ruleset_for_run(ruleset, tl.ruleset, tl.benchmark, tl.division)
    untrusted = [str(p) for p in report.untrusted]
    marks = (
        ([UNTRUSTED] if untrusted else [])
        + ([UNVERIFIED] if unverified else [])
        + (["RESUMED"] if scan.resumed else [])
        + ([NOT_COMPARABLE] if scan.not_comparable else [])
    )
    label = recorded_run_id(run) + (f" ({', '.join(marks)})" if marks else "")
    default = AS_RECORDED if scan.imported else "official"
    notes = [elsewhere] if elsewhere else []
    name = canonical_name(interpretation) if interpretation else default
    return _Run(run, scan, known, unverified, label, name, untrusted, report, notes)


def _marks(run: _Run) -> dict[str, Any]:
    return {
        "unverified": run.unverified,
        "resumed": run.scan.resumed,
        "not_comparable": run.scan.not_comparable,
        "untrusted": run.untrusted,
    }


def _one(values: set[Any], what: str, runs: Sequence[_Run]) -> Any:
    if len(values) > 1:
        raise ScoreInputError(
            f"runs {', '.join(recorded_run_id(r.run) for r in runs)} differ in {what} "
            f"({', '.join(map(repr, sorted(values, key=repr)))}): score one result set at a time"
        )
    return next(iter(values))


def _score_group(runs: list[_Run]) -> SetScore:
    known_name = _one({r.known.name for r in runs}, "ruleset", runs)
    benchmark = _one({r.tl.benchmark for r in runs}, "benchmark", runs)
    division = _one({r.tl.division for r in runs}, "division", runs)
    factor = _one({r.scaling_factor for r in runs}, "scaling factor", runs)
    outcomes: list[RunOutcome] = []
    derived: list[Derivation] = []
    for run in runs:
        outcome, d = _outcome(run)
        outcomes.append(outcome)
        if d is not None:
            derived.append(d)
    known = runs[0].known
    rcp_result: CheckResult | None = None
    if derived and known.has_rcps(benchmark) and division != "open":
        rcp_result = rcp([d.text() for d in derived], known_name)  # the RCP checker reads every log of the set
    result = score_set(outcomes, benchmark, known_name, division, factor, rcp_result)
    folder, gbs = runs[0].set_key
    result.extra["set"] = folder or f"GBS {gbs}"
    notes = [note for run in runs for note in run.notes]
    if notes:
        result.extra["notes"] = notes
    return result


def _outcome(run: _Run) -> tuple[RunOutcome, Derivation | None]:
    try:
        d = derive_from(run.tl, run.scan.source, run.known, run.interpretation)
    except ReplayError as e:
        rows = compute_scores(run.run, run.known, check=False, scan=run.scan)
        write_rows(run.run, mark_rows(rows, **_marks(run)), run.scan.heads)
        proof = proven_by(run.report, None)
        return RunOutcome(run.label, None, "none", None, str(e), run.interpretation, proof), None
    check = compliance_lines(d.lines, run.known)
    done: dict[str, Outcome] = {run.interpretation: (d, check)}
    rows = compute_scores(run.run, run.known, check=False, done=done, scan=run.scan)
    write_rows(run.run, mark_rows(rows, **_marks(run)), run.scan.heads)
    proof = proven_by(run.report, d.passing_step)
    return RunOutcome(run.label, d.minutes, d.status, check, "", run.interpretation, proof), d


def score_runs(
    run_dirs: Sequence[Path], ruleset: str | None, interpretation: str | None, force: bool
) -> list[SetScore]:
    """Every set among `run_dirs`, scored as the result summarizer scores a result folder."""
    flag = get_known(ruleset) if ruleset is not None else None  # looked up once, for every run
    runs = [_open(Path(d), flag, interpretation, force) for d in run_dirs]  # refuse before writing
    groups: dict[tuple[str | None, int | None], list[_Run]] = {}
    for run in runs:
        groups.setdefault(run.set_key, []).append(run)
    order = sorted(groups, key=lambda k: (k[0] is None, k[0] or "", k[1] is None, k[1] or 0))
    return [_score_group(groups[k]) for k in order]
