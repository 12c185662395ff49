"""Replay a run and keep its derived files: what `recorder replay` does, and what `recorder report` needs.

Two entry points share one way of writing: `replay_run` (the command: verify, scan once, derive one
interpretation or compare them all, check, write) and `ensure_derived` (the report: the files, written only
when missing or older than the segments). Both write the scores through `write_scores` and the mllog through
`write_mllog`, so a file under `derived/` holds the same bytes whichever of the two wrote it. Nothing here
prints: what the command shows comes back as `Notice`s and a `ReplayResult`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from recorder.comparability import NOT_COMPARABLE, with_what_judges
from recorder.errors import InputError, RecorderError
from recorder.output import output_file, write_output
from recorder.rules import BENCHMARK
from recorder.store.read_only_runs import writable_run
from recorder.store.reader import read_run
from recorder.store.run import RunDir, derived_dir, write_derived
from recorder.verify.proof import proven_by
from replay.checkers.check import CheckResult, compliance_lines, mlperf_logging_version, rcp, rcp_not_run
from replay.checkers.preflight import UNTRUSTED, UNVERIFIED, mark_rows, verified
from replay.derive import Derivation, derive_from
from replay.errors import NoCheckpointError, NotEvaluatedError, ReplayError, ReplayOutputError
from replay.interpretations import AS_RECORDED, get_interpretation
from replay.rulesets import KnownRuleset, get_known, ruleset_for_run
from replay.run_scan import RunScan, scan_run, scan_verified
from replay.scorekeeping.scores import SCORES_FILE, Outcome, applicable_to, compute_scores, scores_claim, write_rows
from replay.scorekeeping.scores_check import check_scores
from replay.source import InMemory, Streamed

OFFICIAL = "official"


def write_scores(
    run: RunDir,
    scan: RunScan,
    ruleset: KnownRuleset | None,
    unverified: list[str],
    done: dict[str, Outcome] | None = None,
    untrusted: list[str] | None = None,
    check: bool = True,
) -> list[dict[str, Any]]:
    """Every applicable interpretation's row, carrying the run's trust marks (unverified, untrusted and
    judged with --untrusted-ok, resumed, its own target), written to `derived/scores.jsonl` with the events
    it was derived from (derived/state.json). `done`: derivations (and verdicts) already made; `check`:
    whether the compliance checker judges the interpretations not in `done` (else their verdict is null)."""
    rows = compute_scores(run, ruleset, check=check, done=done, scan=scan)
    if not check:
        _keep_recorded_verdicts(run, scan, rows)
    marked = mark_rows(
        rows, unverified=unverified, resumed=scan.resumed, not_comparable=scan.not_comparable, untrusted=untrusted
    )
    write_rows(run, marked, scan.heads)
    return marked


def _keep_recorded_verdicts(run: RunDir, scan: RunScan, rows: list[dict[str, Any]]) -> None:
    """The compliance checker's verdicts an earlier `replay --check` recorded, kept in rows that derive the
    same mllog from the same events (the scores file claims them, under this mlperf-logging): `--compare`
    after `--check` still shows them, and so does the report."""
    from replay.scorekeeping.scores_check import recorded_rows

    if scores_claim(run, scan.heads) != "current":
        return
    recorded = recorded_rows(run)
    if not isinstance(recorded, list):
        return
    same = ("ruleset", "interpretation", "status", "passing_step", "run_start_ns", "run_stop_ns", "minutes")
    verdicts = {
        tuple(old.get(k) for k in same): old["checker"]
        for _, old in recorded
        if isinstance(old, dict) and isinstance(old.get("checker"), str)
    }
    for row in rows:
        if row["checker"] is None:
            row["checker"] = verdicts.get(tuple(row.get(k) for k in same))


# in a derived mllog's name: the run's verdict does not compare with MLPerf results (recorder.comparability)
NOT_COMPARABLE_MARK = NOT_COMPARABLE.replace(" ", "_")


def mllog_path(
    run: RunDir,
    interpretation: str,
    unverified: list[str],
    untrusted: list[str] | None = None,
    not_comparable: str | None = None,
) -> Path:
    """Where the run's mllog under `interpretation` lives (marked in its name when derived unverified, judged
    past its trust problems, or not comparable with MLPerf results)."""
    marks = (f".{UNTRUSTED}" if untrusted else "") + (f".{UNVERIFIED}" if unverified else "")
    marks += f".{NOT_COMPARABLE_MARK}" if not_comparable is not None else ""
    return run.derived / f"result_{interpretation}{marks}.txt"


def not_comparable_header(why: str) -> bytes:
    """The first line of a derived mllog whose run is not comparable: the verdict, where anyone who reads the
    file sees it. It holds no ':::MLLOG', so mlperf-logging's parser skips it (the checker judges the lines
    as derived; it cannot know the evaluation they stand for)."""
    said = " ".join(why.replace(":::", ":").split())
    return f"{NOT_COMPARABLE}: {said}; these lines are no MLPerf result (`recorder replay` says why)\n".encode()


def _marked_chunks(d: Derivation, not_comparable: str | None) -> Iterator[bytes]:
    if not_comparable is not None:
        yield not_comparable_header(not_comparable)
    yield from d.chunks()


def _drop_other_verdict(path: Path, not_comparable: str | None) -> None:
    """Remove the same mllog under the other comparability verdict, so no unmarked copy outlives the mark
    (a cache: the events derive it again)."""
    mark = f".{NOT_COMPARABLE_MARK}.txt"
    if not_comparable is not None:
        other = path.with_name(path.name.removesuffix(mark) + ".txt")
    else:
        other = path.with_name(path.name.removesuffix(".txt") + mark)
    with contextlib.suppress(OSError):
        other.unlink(missing_ok=True)


def write_mllog(
    run: RunDir,
    scan: RunScan,
    ruleset: KnownRuleset,
    interpretation: str,
    unverified: list[str],
    output: Path | None = None,
    untrusted: list[str] | None = None,
) -> tuple[Derivation, Path]:
    """Derive the run's mllog and write it: under `derived/` (never through a symlink out of the run), or to
    `output`, which then gets an `.UNVERIFIED` sidecar when the run failed verification. A run that is not
    comparable says so in the file's name and first line. Nothing is written when the derivation raises
    (ReplayError)."""
    d = derive_from(scan.timeline, scan.source, ruleset, interpretation)
    why_not = scan.not_comparable
    if output is None:
        path = derived_dir(run) / mllog_path(run, interpretation, unverified, untrusted, why_not).name
        write_derived(path, _marked_chunks(d, why_not))
        _drop_other_verdict(path, why_not)
        return d, path
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with output_file(output) as f:  # never through a symlink planted at -o
            f.writelines(_marked_chunks(d, why_not))
    except OSError as e:
        raise ReplayOutputError(f"-o {output}: cannot write ({e.strerror or e})") from e
    if unverified:  # a chosen name gets a sidecar, so the mark sits next to the file
        write_output(
            output.with_name(output.name + f".{UNVERIFIED}"),
            "derived with --force from a run that fails verification:\n" + "\n".join(unverified) + "\n",
        )
    return d, output


def run_checks(
    d: Derivation,
    known: KnownRuleset,
    tl_benchmark: str | None,
    division: str | None,
    kept: tuple[RunDir, Path] | None,
    mismatch: str | None = None,
) -> list[CheckResult]:
    """The compliance checker (it follows the log's own division), and the RCP checker where the ruleset has
    RCPs for the benchmark and the division is not open (RCPs bind the closed division only). `kept`: the run
    and the derived file holding `d`'s lines, whose RCP verdict replay.checkers.rcp_cache keeps (`recorder report`
    reads it).
    `mismatch`: why the ruleset does not know the log's benchmark; the checker then cannot run, and says so."""
    benchmark = tl_benchmark or BENCHMARK  # a run that states no benchmark is the recorder's own
    if mismatch is not None:
        why = f"{mismatch}, so it has no rules to judge this log by"
        return [CheckResult("compliance checker", known.name, False, (why,), mlperf_logging_version(), ran=False)]
    checks = [compliance_lines(d.lines, known)]
    if not known.has_rcps(benchmark):
        checks.append(rcp_not_run(known.name, f"training {known.name} has no RCPs for {benchmark}"))
    elif division == "open":
        checks.append(rcp_not_run(known.name, "open division: RCPs bind the closed division only"))
    elif kept is not None:
        from replay.checkers.rcp_cache import cached_rcp

        checks.append(cached_rcp(*kept, known.name)[0])
    else:
        checks.append(rcp([d.text()], known.name))  # -o: a log outside the run, read whole
    return checks


@dataclass(frozen=True)
class ReplayRequest:
    """What `recorder replay` was asked; the names are checked when the request is made, before any read: the
    ruleset's is looked up here, once (`known`), and passed on."""

    run_dir: Path
    ruleset: str | None = None
    interpretation: str | None = None
    compare: bool = False
    output: Path | None = None
    check: bool = False
    force: bool = False
    known: KnownRuleset | None = field(init=False, default=None)  # the ruleset named by `ruleset`

    def __post_init__(self) -> None:
        if self.ruleset is not None:
            object.__setattr__(self, "known", get_known(self.ruleset))
        if self.interpretation is not None:
            object.__setattr__(self, "interpretation", get_interpretation(self.interpretation).name)


NoticeKind = Literal["warning", "note", "unverified", "untrusted", "resumed", "not-comparable"]


@dataclass(frozen=True)
class Notice:
    """One thing replay says about the run before its result (the command chooses how it looks)."""

    kind: NoticeKind
    text: str


@dataclass
class ReplayResult:
    """What one replay found and wrote. `refused`: the error to raise once the notices are shown."""

    notices: list[Notice]
    interpretation: str
    ruleset: str
    refused: RecorderError | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)  # written to derived/scores.jsonl
    derivation: Derivation | None = None
    path: Path | None = None  # where the mllog went
    checks: list[CheckResult] = field(default_factory=list)
    mismatch: str | None = None  # why the ruleset does not know the run's benchmark
    unverified: bool = False
    untrusted: list[str] = field(default_factory=list)  # trust problems judged past with --untrusted-ok
    resumed: bool = False
    comparable: bool = True
    proof: str = ""  # what the verdict rests on (recorder.verify.proof)

    @property
    def failed(self) -> bool:
        """The data says no: a checker that failed, or (with --check) could not judge a benchmark the ruleset
        does not know. As recorded, such a log is replayed from its own lines: no checker needed."""
        return not all(c.ok and c.error is None and (c.ran or c.tool != "compliance checker") for c in self.checks)


def _notices(
    scan: RunScan, unverified: list[str], untrusted: list[str], torn: list[Any], known: KnownRuleset
) -> list[Notice]:
    notices = [Notice("unverified", p) for p in unverified]
    notices += [Notice("untrusted", f"{p} (judged anyway: --untrusted-ok)") for p in untrusted]
    notices += [Notice("warning", str(t)) for t in torn]  # a writer died mid-append: its complete events count
    notices += [Notice("warning", str(j)) for j in scan.clock_steps]
    notices += [
        Notice("resumed", f"{r}: its history is kept, but a resumed run is not a valid timed MLPerf run")
        for r in scan.resumed
    ]
    why_not = scan.not_comparable
    if why_not is not None:
        notices.append(Notice("not-comparable", with_what_judges(why_not, scan.target, known.name)))
    return notices


def replay_run(request: ReplayRequest) -> ReplayResult:
    """Verify the run (refused unless `force`: UnverifiedRunError), scan it once, and derive and write what
        `request` asks, with its scores. An error raised once the notices are known comes back as `refused`, so
    that the command shows them first."""
    unverified, report = verified(request.run_dir, request.force)
    scan, torn, skipped = scan_verified(report)  # an intact run is streamed: the facts are kept, not the events
    run, elsewhere = writable_run(report.run, request.output)  # a read-only run's caches go elsewhere
    tl = scan.timeline
    default = AS_RECORDED if scan.imported else OFFICIAL
    name = request.interpretation or default
    as_recorded = name == AS_RECORDED and not request.compare
    # refuses before anything is written; as recorded, the checker may judge a log whose benchmark the run's
    # own ruleset does not know (the data says no: exit 1 after the checkers, with why)
    lenient = as_recorded and request.ruleset is None
    known = ruleset_for_run(request.known, tl.ruleset, tl.benchmark, tl.division, lenient=lenient)
    result = ReplayResult([Notice("warning", f"{run.events}/{entry}") for entry in skipped], name, known.name)
    result.notices += [Notice("note", elsewhere)] if elsewhere else []
    result.mismatch = known.benchmark_problem(tl.benchmark, tl.division)
    result.unverified, result.resumed = bool(unverified), bool(scan.resumed)
    result.untrusted = [str(p) for p in report.untrusted]
    result.comparable = scan.not_comparable is None
    if request.interpretation == AS_RECORDED and not tl.mllog_segments:  # an imported mllog's lines
        result.refused = InputError(
            f"{request.run_dir}: as-recorded replays imported logs, and this run has no imported mllog lines: "
            "use --interpretation official, or --compare"
        )
        return result
    result.notices += _notices(scan, unverified, result.untrusted, torn, known)
    if request.compare:
        result.rows = write_scores(run, scan, known, unverified, untrusted=result.untrusted, check=request.check)
        return result
    try:
        _derive(request, result, run, scan, known, unverified)
        result.proof = proven_by(report, result.derivation.passing_step if result.derivation else None)
    except NotEvaluatedError as e:  # the hint repeats the path as the user typed it
        if unverified:  # eval refuses a run that fails verification: no command would fill the gap
            result.refused = NotEvaluatedError(f"{e}; the run fails verification: recorder verify {request.run_dir}")
        else:
            command = evaluate_hint(request.run_dir, scan.opened)
            note = f" ({SPEC_NOTE})" if "SPEC.toml" in command else ""
            result.refused = NotEvaluatedError(f"{e}; evaluate them: {command}{note}")
    except NoCheckpointError as e:  # the history shows `no checkpoint` too, without waiting for `compact`
        write_scores(run, scan, known, unverified, untrusted=result.untrusted, check=False)
        result.refused = e
    except RecorderError as e:  # a fact the derivation needs is missing, a file cannot be written: after the notices
        result.refused = e
    return result


# Said where a `recorder eval` needs --task SPEC.toml: what to put there, and why.
SPEC_NOTE = "SPEC.toml: the task spec it trained on; this run records no evaluation settings of its own"


def evaluate_hint(run_dir: Path | str, opened: dict[str, Any], task: Path | None = None) -> str:
    """The `recorder eval` command line a hint shows, the one that works on this run: a run not recorded by
    `recorder train` has no evaluation settings of its own, so it needs the task spec it was trained on (`task`
    when known, else SPEC.toml)."""
    if isinstance((opened.get("config") or {}).get("eval"), dict):
        return f"recorder eval {run_dir}"
    return f"recorder eval {run_dir} --task {task or 'SPEC.toml'}"


def _derive(
    request: ReplayRequest, result: ReplayResult, run: RunDir, scan: RunScan, known: KnownRuleset, unverified: list[str]
) -> None:
    name, tl = result.interpretation, scan.timeline
    d, path = write_mllog(run, scan, known, name, unverified, request.output, result.untrusted)
    kept = (run, path) if request.output is None else None  # a log under derived/: its RCP verdict is kept there
    checks = run_checks(d, known, tl.benchmark, tl.division, kept, result.mismatch) if request.check else []
    done = {name: (d, checks[0] if checks else None)}
    result.derivation, result.path, result.checks = d, path, checks
    # the checker judges only what --check asks about: each other interpretation's verdict is left null
    result.rows = write_scores(run, scan, known, unverified, done, result.untrusted, check=False)


@dataclass(frozen=True)
class DerivedFiles:
    """A run's score rows and derived mllog, as `ensure_derived` left them."""

    rows: list[dict[str, Any]]
    interpretation: str  # the mllog's: official, or as-recorded for an imported run
    mllog: Path | None
    why: str  # why there is no mllog, when there is none


def _newest_segment_ns(run: RunDir) -> int:
    return max((p.stat().st_mtime_ns for p in run.events.glob("*.arrows")), default=0)


def _fresh(path: Path, run: RunDir) -> bool:
    """A derived file written after the last change to any segment still describes the run."""
    return path.exists() and path.stat().st_mtime_ns >= _newest_segment_ns(run)


def _is_imported(run: RunDir) -> bool:
    return any(p.name.startswith("import-") for p in run.events.glob("*.arrows"))


def ensure_derived(
    run: RunDir, ruleset: KnownRuleset | None, unverified: list[str], recheck: bool = True
) -> DerivedFiles:
    """The run's score rows and derived mllog, written when missing or stale, and the scores re-derived and
    rewritten when they disagree with the events (when `recheck`: replay.scorekeeping.scores_check.RecheckBudget allowed
    it). `unverified`: the problems verify found (the run is then read whole, and its files marked)."""
    name = AS_RECORDED if _is_imported(run) else OFFICIAL
    scores_path = run.derived / SCORES_FILE
    # either verdict's name: a file written after the last segment changed has the run's current one
    named = [mllog_path(run, name, unverified, not_comparable=why) for why in (None, NOT_COMPARABLE)]
    mllog = next((path for path in named if _fresh(path, run)), named[0])
    scan = _lazy_scan(run, unverified)  # one pass over the events, made at most once and only when needed
    # a scores file derived from other events is stale (recorder.derived_state); one that claims the current
    # events is still a file anyone can edit: re-derived when it disagrees
    if recheck and scores_path.exists():
        stale = scores_claim(run, scan().heads) == "stale" or bool(check_scores(run, scan()))
    else:
        stale = not _fresh(scores_path, run)
    if stale:
        write_scores(run, scan(), applicable_to(scan().timeline, ruleset)[0], unverified)
    rows = [json.loads(line) for line in scores_path.read_text().splitlines() if line.strip()]
    if _fresh(mllog, run):
        return DerivedFiles(rows, name, mllog, "")
    try:
        _, mllog = write_mllog(run, scan(), applicable_to(scan().timeline, ruleset)[0], name, unverified)
    except ReplayError as e:
        return DerivedFiles(rows, name, None, str(e))
    return DerivedFiles(rows, name, mllog, "")


def _lazy_scan(run: RunDir, unverified: list[str]) -> Callable[[], RunScan]:
    made: list[RunScan] = []

    def scan() -> RunScan:
        if not made:  # an intact run is streamed (its facts kept, not its events); a damaged one read whole
            source = InMemory(read_run(run).events) if unverified else Streamed(run)
            made.append(scan_run(source, keep_events=bool(unverified)))
        return made[0]

    return scan
