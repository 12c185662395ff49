"""`recorder replay`, `recorder score`. Only typer and rich at module level: replay's
modules (and mlperf-logging) are imported inside the commands, so `recorder --help` stays fast."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recorder.cli.shared.paths import check_output
from recorder.cli.shared.signing_keys import UntrustedOkOption, apply_untrusted_ok
from recorder.cli.terminal.help import HELP_WHEN_SHOWN
from recorder.cli.terminal.json_output import FormatOption, print_document
from recorder.cli.terminal.output import console, err, label, line, warning
from recorder.cli.terminal.progress import working
from recorder.cli.terminal.tables import Col, minutes_cell, print_fitted, set_wide

if TYPE_CHECKING:
    from rich.text import Text

    from replay.run_replay import Notice, ReplayResult
    from replay.scorekeeping.set_score import SetScore

RulesetOpt = Annotated[
    str | None,
    typer.Option(
        "--ruleset",
        help="MLPerf Training ruleset (any the installed mlperf-logging ships). Default: the run's own "
        "(import --ruleset), else 6.1.0.",
    ),
]
InterpOpt = Annotated[
    str | None,
    typer.Option("--interpretation", "-i", help="The interpretation (listed by --help)."),
]


def _interpretation_help() -> str:
    """--interpretation's help: the interpretations table's names (replay.interpretations), each earlier name
    beside the one it now is."""
    from replay.interpretations import ALIASES, INTERPRETATIONS

    earlier = {new: old for old, new in ALIASES.items()}
    names = [f"{name} ({earlier[name]} is its earlier name)" if name in earlier else name for name in INTERPRETATIONS]
    return f"{', '.join(names)}. Default: as-recorded for imported logs, official otherwise."


HELP_WHEN_SHOWN["--interpretation"] = _interpretation_help


def replay(
    run_dir: Annotated[Path, typer.Argument(help="The run directory.")],
    ruleset: RulesetOpt = None,
    interpretation: InterpOpt = None,
    compare: Annotated[bool, typer.Option("--compare", help="One table: every interpretation side by side.")] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="Where to write the mllog (default <run>/derived/result_<interpretation>.txt)."
        ),
    ] = None,
    check: Annotated[bool, typer.Option("--check", help="Run mlperf-logging's compliance and RCP checkers.")] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Derive even from a run that fails `recorder verify` (the output is then marked UNVERIFIED).",
        ),
    ] = False,
    untrusted_ok: UntrustedOkOption = False,
    fmt: FormatOption = "table",
    wide: Annotated[bool, typer.Option("--wide", help="--compare: every column, however narrow the terminal.")] = False,
) -> None:
    """Derive the run's mllog from its events under an interpretation of the rule (and check it)."""
    from replay.run_replay import ReplayRequest, replay_run

    apply_untrusted_ok(untrusted_ok)
    set_wide(wide)
    # Every option is checked before the run is read or anything written.
    if compare and (interpretation or output):
        raise typer.BadParameter("--compare prints every interpretation; drop --interpretation/-o")
    request = ReplayRequest(run_dir, ruleset, interpretation, compare, output, check, force)
    if output is not None:
        check_output(output)
    with working(f"replay: verifying and reading, deriving{', mlperf-logging checkers' if check else ''}: {run_dir}"):
        result = replay_run(request)  # refuses (exit 1) a run that fails verify, unless --force
    if fmt == "json":
        _replay_json(result, compare)
        return
    for notice in result.notices:
        console.print(_notice_line(notice))
    if result.refused is not None:
        raise result.refused
    if compare:
        _compare_table(result.rows)
        return
    _print_replayed(result)
    if result.mismatch is not None and not check:  # as recorded, the log's own lines need no checker to be replayed
        console.print(
            line(label("note:", "yellow"), f"{result.mismatch}; --check says what the checker can judge of it")
        )
    if result.failed:
        raise typer.Exit(1)


def _replay_json(result: ReplayResult, compare: bool) -> None:
    """`replay --format json`: the document docs/cli.md describes; the exit status as the table's."""
    doc: dict[str, Any] = {
        "ruleset": result.ruleset,
        "notices": [{"kind": n.kind, "text": n.text} for n in result.notices],
        "refused": None if result.refused is None else str(result.refused),
    }
    d = result.derivation
    if compare:
        doc["interpretations"] = result.rows
    elif d is not None:
        doc.update(
            interpretation=result.interpretation,
            status=d.status,
            passing_step=d.passing_step,
            minutes=d.minutes,
            why=d.why,
            lines=len(d.lines),
            path=None if result.path is None else os.fsdecode(result.path),
            proof=result.proof,
            unverified=result.unverified,
            untrusted=result.untrusted,
            resumed=result.resumed,
            comparable=result.comparable,
            missing_keys=list(d.missing_keys),
            mismatch=result.mismatch,
            checks=[
                {"tool": c.tool, "verdict": c.verdict, "ok": c.ok, "reasons": list(c.reasons)} for c in result.checks
            ],
        )
    print_document(doc)
    if result.refused is not None:
        raise result.refused
    if not compare and result.failed:
        raise typer.Exit(1)


def _notice_line(notice: Notice) -> Text:
    from recorder.comparability import NOT_COMPARABLE
    from replay.checkers.preflight import UNTRUSTED, UNVERIFIED

    if notice.kind == "warning":
        return warning(notice.text)
    tag, style = {
        "unverified": (f"{UNVERIFIED}:", "bold red"),
        "untrusted": (f"{UNTRUSTED}:", "bold red"),
        "note": ("note:", "yellow"),
        "resumed": ("resumed:", "yellow"),
        "not-comparable": (f"{NOT_COMPARABLE}:", "yellow"),
    }[notice.kind]
    return line(label(tag, style), notice.text)


def _print_replayed(result: ReplayResult) -> None:
    from recorder.comparability import NOT_COMPARABLE
    from replay.checkers.preflight import UNTRUSTED, UNVERIFIED

    d = result.derivation
    assert d is not None  # a replay that was not refused derived its interpretation
    passing = f"passing step {d.passing_step}" if d.passing_step is not None else "no passing step"
    tags = (
        ([label(UNTRUSTED, "bold red")] if result.untrusted else [])
        + ([label(UNVERIFIED, "bold red")] if result.unverified else [])
        + ([label("resumed", "yellow")] if result.resumed else [])
        + ([label(NOT_COMPARABLE.lower(), "yellow")] if not result.comparable else [])
    )
    console.print(
        line(
            *tags,
            f"{result.interpretation}: {d.status}, {passing}, {minutes_cell(d.minutes)} minutes ({d.why}); "
            f"{len(d.lines)} lines -> {result.path}; {result.proof}",
        )
    )
    if d.missing_keys:
        console.print(
            warning(
                f"the run recorded no {', '.join(d.missing_keys)} (mllog_config): "
                f"the {result.ruleset} checker requires them"
            )
        )
    for c in result.checks:
        console.print(c.summary(), highlight=False)


# `replay --compare`'s columns (replay.compare.COLUMNS); on a narrow terminal the highest `drop` goes first
COMPARE_COLUMNS = (
    Col("interpretation", whole=True),
    Col("status"),
    Col("step", "right", whole=True),
    Col("stop_s", "right", drop=3),
    Col("minutes", "right", whole=True),
    Col("delta", "right", drop=2),
    Col("checker", drop=1),
)


def _compare_table(rows: list[dict[str, Any]]) -> None:
    from replay.compare import COLUMNS, compare_table

    t = compare_table(rows)
    assert [c.name for c in COMPARE_COLUMNS] == list(COLUMNS)
    print_fitted(console, COMPARE_COLUMNS, t.rows, t.title)  # too narrow: columns left out, and said
    console.print(t.legend)
    for note in t.notes:
        console.print(f"  {note}")
    if t.unverified:
        console.print(
            line(
                label("UNVERIFIED:", "bold red"),
                "every row above is derived (--force) from a run that fails `recorder verify`; "
                "no score of it is evidence",
            )
        )
    if t.resumed:
        console.print(
            line(
                label("RESUMED:", "yellow"),
                "the run was resumed from a checkpoint; its history is kept, but it is not a valid timed MLPerf run",
            )
        )


FormatOpt = Annotated[str, typer.Option("--format", help="table or json.")]  # score: one document per set


def score(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories (e.g. the runs of one result folder).")],
    ruleset: RulesetOpt = None,
    interpretation: InterpOpt = None,
    fmt: FormatOpt = "table",
    force: Annotated[
        bool,
        typer.Option("--force", help="Score even runs that fail `recorder verify` (each is then marked UNVERIFIED)."),
    ] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however narrow the terminal.")] = False,
    untrusted_ok: UntrustedOkOption = False,
) -> None:
    """The result summarizer's strong-scaling score of each set of runs (a result folder, else a global batch
    size): the olympic average of compliant runs times the scaling factor, each run's verdict and reasons.
    Exit 0 when every set scores, 1 when one does not."""
    import json

    from replay.scorekeeping.score_runs import score_runs

    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"--format is table or json, not {fmt!r}")
    set_wide(wide)
    apply_untrusted_ok(untrusted_ok)
    sets = score_runs(run_dirs, ruleset, interpretation, force)
    for note in (n for s in sets for n in s.extra.get("notes", [])):  # on stderr: json output stays whole
        err.print(line(label("note:", "yellow"), note))
    if fmt == "json":
        payload = [s.to_json() for s in sets]
        text = json.dumps(payload[0] if len(payload) == 1 else payload, indent=2)
        console.print(text, markup=False, highlight=False, soft_wrap=True)
    else:
        for result in sets:
            _score_table(result)
    if not all(s.scored for s in sets):
        raise typer.Exit(1)


# a set's table (`recorder score`, `check-submission`); the checker's verdict wraps, the run id never
SCORE_COLUMNS = (
    Col("run", whole=True),
    Col("interpretation", drop=2),
    Col("status"),
    Col("minutes", "right"),
    Col("compliance checker", drop=1),
)


def _score_table(result: SetScore) -> None:
    set_name = result.extra.get("set", "")
    title = (
        f"{set_name}: {result.benchmark}, training {result.ruleset}, {result.division or '-'} division, "
        f"{len(result.runs)} runs"
    )
    rows = [
        [r.run, r.interpretation, r.status, minutes_cell(r.minutes), r.check.verdict if r.check else (r.error or "-")]
        for r in result.runs
    ]
    print_fitted(console, SCORE_COLUMNS, rows, title)
    scaling = f" x scaling factor {result.scaling_factor!r}" if result.scaling_factor != 1.0 else ""
    console.print(
        line(
            f"olympic score (mlperf-logging {result.to_json()['mlperf_logging']} result summarizer's "
            f"_compute_strong_score_standalone): {minutes_cell(result.olympic_minutes)} minutes{scaling} = "
            f"{minutes_cell(result.score_minutes)} minutes over {len(result.runs)} runs",
            *([] if result.scored else [label("(not scored)", "bold red")]),
        )
    )
    for reason in result.reasons:
        console.print(f"  {reason}", highlight=False)
    proofs: dict[str, list[str]] = {}
    for r in result.runs:
        proofs.setdefault(r.proof, []).append(r.run)
    for proof, names in proofs.items():
        console.print(f"  {proof}: {', '.join(names)}", highlight=False)
    failing = [r for r in result.runs if not r.compliant]
    if failing:
        console.print(
            line(
                label(f"{len(failing)} of {len(result.runs)} runs fail the compliance checker,", "bold red"),
                "so mlperf-logging's result summarizer would not count them. Reasons:",
            )
        )
        for reasons in sorted({"; ".join(r.reasons()) for r in failing}):
            console.print(f"  - {reasons}", highlight=False)
    if result.rcp is not None:
        console.print(result.rcp.summary(), highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(replay)
    app.command()(score)
