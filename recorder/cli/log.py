"""`recorder verify` and `recorder events`: looking at a run's log itself."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.table import Table

from recorder.cli.output import console, cut, err, label, line, warning
from recorder.cli.progress import progress, working

if TYPE_CHECKING:
    from recorder.signing import SignatureState
    from recorder.verify import Problem, SegmentSummary, VerifyReport


def _utc(time_ns: int) -> str:
    return dt.datetime.fromtimestamp(time_ns / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


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
) -> None:
    """Check a run's log: schema, seq contiguity, digest chains, closing records, signatures, then the facts
    and derived/scores.jsonl (re-derived from the events).

    Torn tails are warnings. A signed run is judged by its own key: an unsigned segment, one signed by another
    key, or a signed segment deleted or cut fails (exit 1). With --trust, each segment is reported signed by
    a trusted key (by its file name), signed by an untrusted key, or unsigned, and only trusted keys pass.
    """
    from recorder.history.cache import verify_with_cache
    from recorder.reader import recorded_run_id
    from recorder.signing import load_trusted
    from recorder.verify.truncation import TRUNCATED_RULE
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
    total = sum(s.events for s in report.segments)
    console.print(f"run {recorded_run_id(report.run)}: {len(report.segments)} segments, {total} events")
    untrusted = 0
    truncated = {p.segment: p.seq for p in report.problems if p.rule == TRUNCATED_RULE}
    for s in report.segments:
        state = "closed" if s.closed else "open (writer did not close)"
        if s.name in truncated:
            state = f"truncated at seq {truncated[s.name]}"
        signature = _signature(report, s, trusted)
        shown = trusted is not None or s.opened_with is not None or signature.text == "bad signature"
        untrusted += not signature.trusted
        console.print(f"  {s.name}  {s.events} events  {state}" + (f"  {signature.text}" if shown else ""))
    for torn in report.torn:
        if torn.bytes_lost:
            console.print(warning(str(torn)))
    for note in report.warnings:
        console.print(warning(note))
    for problem in report.problems:
        console.print(line(label(_verdict(problem), "bold red"), str(problem)))
    if not report.ok:
        console.print(_failed(report))
        raise typer.Exit(1)
    if require_signed and untrusted:
        console.print(f"verify: FAILED ({untrusted} of {len(report.segments)} segments not signed by a trusted key)")
        raise typer.Exit(1)
    console.print("verify: intact")


def _verdict(problem: Problem) -> str:
    """What a problem says of the run: untrusted (no accepted key vouches), truncated (its end is lost) or
    altered (anything else)."""
    if problem.untrusted:
        return "UNTRUSTED:"
    from recorder.verify.truncation import TRUNCATED_RULE

    return "TRUNCATED:" if problem.rule == TRUNCATED_RULE else "ALTERED:"


def _failed(report: VerifyReport) -> str:
    """The verdict line of a run that fails: untrusted alone is said as such, not as an alteration."""
    count = len(report.problems)
    if all(p.untrusted for p in report.problems):
        return f"verify: UNTRUSTED ({count} problems: not signed by an accepted key; no alteration found)"
    return f"verify: FAILED ({count} problems)"


def _segment_bytes(run_dir: Path) -> int | None:
    """The size of every segment, for the progress bar (None when the folder cannot be listed)."""
    try:
        return sum(p.stat().st_size for p in (run_dir / "events").glob("*.arrows") if p.is_file())
    except OSError:
        return None


def _derived_scores(report: VerifyReport) -> None:
    """derived/scores.jsonl against what the events derive (replay.scores_check): a cache that claims the
    current events and disagrees with them fails verify; one derived from earlier events is a note."""
    from recorder.derived_state import stale_note
    from replay.run_scan import scan_run
    from replay.scores import SCORES_FILE, scores_claim
    from replay.scores_check import check_scores
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
    """The key that adopted `s` (recorder.adoption), when verify found nothing wrong with it."""
    from recorder.manifest import ManifestError, read_manifest

    if s.closed or any(p.segment == s.name for p in [*report.problems, *report.untrusted]):
        return None
    try:
        manifest = read_manifest(report.run)
    except ManifestError:
        return None
    entry = manifest.segments.get(s.name) if manifest is not None and manifest.signature_valid else None
    return manifest.public_key if manifest is not None and entry is not None and entry.adopted_bytes else None


def events(
    run_dir: Annotated[Path, typer.Argument(help="The run directory.")],
    kind: Annotated[list[str] | None, typer.Option("--kind", help="Only this kind (repeatable).")] = None,
    fmt: Annotated[
        Literal["table", "json"], typer.Option("--format", help="table or json (one object a line).")
    ] = "table",
) -> None:
    """Print a run's events in merged order (for people debugging a run)."""
    from recorder.catalogue import check_kind
    from recorder.reader import read_run, recorded_run_id

    for k in kind or []:
        check_kind(k)
    log = read_run(run_dir)
    for skipped in log.skipped:
        err.print(warning(f"{log.run.events}/{skipped}"))
    selected = [e for e in log.events if not kind or e.kind in kind]
    if fmt == "json":
        for e in selected:
            row = {
                c: getattr(e, c)
                for c in ("run_id", "writer", "seq", "time_ns", "mono_ns", "kind", "step", "samples_count", "key")
            }
            row.update(value=e.value, data=e.data, digest=e.digest, segment=e.segment)
            typer.echo(json.dumps(row, sort_keys=False))
        return
    table = Table(title=f"{recorded_run_id(log.run)}: {len(selected)} events")
    for col in ("time (UTC)", "writer", "seq", "kind", "step", "samples"):
        table.add_column(col, no_wrap=True)
    for col in ("key", "value", "data"):
        table.add_column(col, overflow="fold")
    for e in selected:
        table.add_row(
            _utc(e.time_ns),
            e.writer,
            str(e.seq),
            e.kind,
            _str(e.step),
            _str(e.samples_count),
            cut(e.key or ""),
            cut(e.value_json or ""),
            cut(e.data_json) if e.data_json != "{}" else "",
        )
    console.print(table)
    for torn in log.torn:
        console.print(warning(str(torn)))


def _str(x: int | None) -> str:
    return "" if x is None else str(x)


def register(app: typer.Typer) -> None:
    app.command()(verify)
    app.command()(events)
