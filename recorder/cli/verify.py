"""`recorder verify`: a run's log checked byte by byte, its rules and its signatures."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recorder.cli.terminal.json_output import FormatOption, print_document
from recorder.cli.terminal.output import console, err, label, line, warning
from recorder.cli.terminal.progress import progress, working

if TYPE_CHECKING:
    from recorder.signing import SignatureState
    from recorder.verify import Problem, SegmentSummary, VerifyReport


_TrustOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--trust",
        help="A public key (KEY.pub) whose signatures you trust; every segment must carry one. Repeatable. "
        "Default: the keys $RECORDER_TRUST names (paths separated by ':').",
    ),
]
_RequireSignedOpt = Annotated[
    bool,
    typer.Option(
        "--require-signed", help="Exit 1 unless every segment is signed by a --trust key (as --trust implies)."
    ),
]


def verify(
    run_dir: Annotated[Path, typer.Argument(help="The run directory (holds events/).")],
    trust: _TrustOpt = None,
    require_signed: _RequireSignedOpt = False,
    fmt: FormatOption = "table",
) -> None:
    """Check a run's log: schema, seq contiguity, digest chains, closing records, signatures, then the facts
    and derived/scores.jsonl (re-derived from the events).

    Torn tails are warnings. A signed run is judged by its own key: an unsigned segment, one signed by another
    key, or a signed segment deleted or cut fails (exit 1). With --trust, each segment is reported signed by
    a trusted key (by its file name), signed by an untrusted key, or unsigned, and only trusted keys pass.
    """
    from recorder.store.run import RunDir

    RunDir.open(run_dir)  # a path that is no run is said before the verifier (pyarrow, DuckDB) loads
    from recorder.history.cache import verify_with_cache
    from recorder.signing import load_trusted
    from recorder.verify.trust import trusted_from_environment

    if require_signed and not trust and not os.environ.get("RECORDER_TRUST"):
        raise typer.BadParameter("--require-signed needs the keys to trust: --trust KEY.pub", param_hint="--trust")
    trusted = load_trusted(trust) if trust else trusted_from_environment()
    with progress(f"verify: reading {run_dir}'s segments", _segment_bytes(run_dir), unit="bytes") as advance:
        report = verify_with_cache(run_dir, trusted=trusted, progress=advance)
    if report.ok:
        with working("verify: checking derived/scores.jsonl against the events"):
            _derived_scores(report)
    if report.ok:
        _keep_verdict(report)
    segments, untrusted = _segment_lines(report, trusted)
    signed_short = require_signed and untrusted > 0
    if fmt == "json":
        _verify_json(report, segments, untrusted, signed_short)
    else:
        _print_report(report, segments, untrusted, signed_short)
    if not report.ok or signed_short:
        raise typer.Exit(1)


def _segment_lines(report: VerifyReport, trusted: dict[str, str] | None) -> tuple[list[dict[str, Any]], int]:
    """Each segment as verify reports it (name, events, state, signature, whether that is shown), and how
    many are not signed by a trusted key."""
    from recorder.verify.truncation import TRUNCATED_RULE

    truncated = {p.segment: p.seq for p in report.problems if p.rule == TRUNCATED_RULE}
    rows, untrusted = [], 0
    for s in report.segments:
        state = "closed" if s.closed else "open (writer did not close)"
        if s.name in truncated:
            state = f"truncated at seq {truncated[s.name]}"
        signature = _signature(report, s, trusted)
        shown = trusted is not None or s.opened_with is not None or signature.text == "bad signature"
        untrusted += not signature.trusted
        rows.append({"name": s.name, "events": s.events, "state": state, "signature": signature.text, "shown": shown})
    return rows, untrusted


def _print_report(report: VerifyReport, segments: list[dict[str, Any]], untrusted: int, signed_short: bool) -> None:
    from recorder.store.reader import recorded_run_id

    total = sum(s.events for s in report.segments)
    console.print(f"run {recorded_run_id(report.run)}: {len(report.segments)} segments, {total} events")
    for s in segments:
        console.print(
            f"  {s['name']}  {s['events']} events  {s['state']}" + (f"  {s['signature']}" if s["shown"] else "")
        )
    for torn in report.torn:  # warnings on stderr: stdout stays the report a script reads
        if torn.bytes_lost:
            err.print(warning(str(torn)))
    for note in report.warnings:
        err.print(warning(note))
    for problem in report.problems:
        console.print(line(label(_verdict(problem), "bold red"), str(problem)))
    if not report.ok:
        console.print(_failed(report))
    elif signed_short:
        console.print(f"verify: FAILED ({untrusted} of {len(report.segments)} segments not signed by a trusted key)")
    else:
        console.print("verify: intact")


def _verify_json(report: VerifyReport, segments: list[dict[str, Any]], untrusted: int, signed_short: bool) -> None:
    """`verify --format json`: the document docs/cli.md describes."""
    from recorder.store.reader import recorded_run_id

    if not report.ok:
        verdict = _failed(report)
    elif signed_short:
        verdict = f"verify: FAILED ({untrusted} of {len(report.segments)} segments not signed by a trusted key)"
    else:
        verdict = "verify: intact"
    print_document(
        {
            "run_id": recorded_run_id(report.run),
            "ok": report.ok and not signed_short,
            "verdict": verdict.removeprefix("verify: "),
            "events": sum(s.events for s in report.segments),
            "segments": [{k: v for k, v in s.items() if k != "shown"} for s in segments],
            "warnings": [str(t) for t in report.torn if t.bytes_lost] + [str(n) for n in report.warnings],
            "problems": [{"verdict": _verdict(p).rstrip(":"), "text": str(p)} for p in report.problems],
        }
    )


def _verdict(problem: Problem) -> str:
    """What a problem says of the run: untrusted (no accepted key vouches), truncated (its end is lost),
    a breach (the run was done against the benchmark's rule: nothing altered) or altered (anything else)."""
    if problem.untrusted:
        return "UNTRUSTED:"
    if problem.missing:
        return "MISSING:"
    from recorder.verify.registry import CHECKS
    from recorder.verify.truncation import TRUNCATED_RULE

    if problem.rule == TRUNCATED_RULE:
        return "TRUNCATED:"
    return "BREACH:" if problem.rule and CHECKS[problem.rule].breach else "ALTERED:"


def _failed(report: VerifyReport) -> str:
    """The verdict line of a run that fails: untrusted alone, or breaches of the rule alone, are said as
    such, not as an alteration."""
    count = len(report.problems)
    if all(p.untrusted for p in report.problems):
        return f"verify: UNTRUSTED ({count} problems: not signed by an accepted key; no alteration found)"
    if all(p.missing for p in report.problems):
        return f"verify: MISSING ({count} problems: evidence is gone, the scores cannot be rechecked; nothing altered)"
    if all(_verdict(p) in ("BREACH:", "UNTRUSTED:") for p in report.problems):
        return f"verify: BREACH ({count} problems: the run breaks the benchmark's rule; no alteration found)"
    return f"verify: FAILED ({count} problems)"


def _segment_bytes(run_dir: Path) -> int | None:
    """The size of every segment, for the progress bar (None when the folder cannot be listed)."""
    try:
        return sum(p.stat().st_size for p in (run_dir / "events").glob("*.arrows") if p.is_file())
    except OSError:
        return None


def _derived_scores(report: VerifyReport) -> None:
    """derived/scores.jsonl against what the events derive (replay.scorekeeping.scores_check): a cache that claims the
    current events and disagrees with them fails verify; one derived from earlier events is a note."""
    from recorder.derived_state import stale_note
    from replay.run_scan import scan_run
    from replay.scorekeeping.scores import SCORES_FILE, scores_claim
    from replay.scorekeeping.scores_check import check_scores
    from replay.source import Streamed

    run = report.run
    if not os.path.lexists(run.derived / SCORES_FILE):
        return
    scan = scan_run(Streamed(run))  # an intact run: streamed
    if scores_claim(run, scan.heads) == "stale":
        report.warnings.append(stale_note(run, SCORES_FILE, scan.heads))
        return
    report.problems.extend(m.problem() for m in check_scores(run, scan))


def _keep_verdict(report: VerifyReport) -> None:
    """The run's verified-state record (recorder.derived_state), for readers that would verify it again."""
    from recorder.derived_state import record_verified

    if report.untrusted:  # judged past its trust problems (--untrusted-ok): no verdict for others to reuse
        return
    if all(s.closed and s.size >= 0 and s.head for s in report.segments):  # a closed run: it stays so
        record_verified(report.run, {s.name: (s.events, s.head, s.size) for s in report.segments})


def _signature(report: VerifyReport, s: SegmentSummary, trusted: dict[str, str] | None) -> SignatureState:
    from recorder.signing import signature_state
    from recorder.verify import SIGNATURE_RULE

    bad = any(p.segment == s.name and p.rule == SIGNATURE_RULE for p in report.problems)
    return signature_state(s.signed_by, s.opened_with, bad, trusted, _adopted_by(report, s))


def _adopted_by(report: VerifyReport, s: SegmentSummary) -> str | None:
    """The key that adopted `s` (recorder.store.adoption), when verify found nothing wrong with it."""
    from recorder.store.signed_segments import ManifestError, read_manifest

    if s.closed or any(p.segment == s.name for p in [*report.problems, *report.untrusted]):
        return None
    try:
        manifest = read_manifest(report.run)
    except ManifestError:
        return None
    entry = manifest.segments.get(s.name) if manifest is not None and manifest.signature_valid else None
    return manifest.public_key if manifest is not None and entry is not None and entry.adopted_bytes else None


def register(app: typer.Typer) -> None:
    app.command()(verify)
