"""`recorder replay`, `recorder score`, `recorder check-submission`. Only typer and rich at module level: replay's
modules (and mlperf-logging) are imported inside the commands, so `recorder --help` stays fast."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recorder.cli._json import FormatOption, print_document
from recorder.cli._output import console, err, label, line, warning
from recorder.cli._paths import check_output
from recorder.cli._progress import working
from recorder.cli._signing import UntrustedOkOption, apply_untrusted_ok
from recorder.cli._tables import Col, print_fitted, set_wide
from recorder.errors import RecorderError

if TYPE_CHECKING:
    from rich.text import Text

    from replay.run_replay import Notice, ReplayResult
    from replay.set_score import SetScore

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
    typer.Option(
        "--interpretation",
        "-i",
        help="official, earliest-passing, include-final-save, zero-save-cost, inline-eval, checker-order, "
        "nemo-rl-ge (NeMo-RL's >=; ge-threshold is its earlier name), as-recorded. Default: as-recorded for "
        "imported logs, official otherwise.",
    ),
]


def _minutes(m: float | None) -> str:
    return "-" if m is None or not math.isfinite(m) else f"{m:.3f}"  # a NaN run_stop is no number of minutes


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
    from replay.preflight import UNTRUSTED, UNVERIFIED

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
    from replay.preflight import UNTRUSTED, UNVERIFIED

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
            f"{result.interpretation}: {d.status}, {passing}, {_minutes(d.minutes)} minutes ({d.why}); "
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

    from replay.score_runs import score_runs

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


SUBMISSION_COLUMNS = (
    Col("system", whole=True),
    Col("benchmark", whole=True),
    Col("runs", "right", drop=3),
    Col("score", "right"),
    Col("scaling", "right", drop=2),
    Col("verdict"),
    Col("reasons", drop=1),
)


def _score_table(result: SetScore) -> None:
    set_name = result.extra.get("set", "")
    title = (
        f"{set_name}: {result.benchmark}, training {result.ruleset}, {result.division or '-'} division, "
        f"{len(result.runs)} runs"
    )
    rows = [
        [r.run, r.interpretation, r.status, _minutes(r.minutes), r.check.verdict if r.check else (r.error or "-")]
        for r in result.runs
    ]
    print_fitted(console, SCORE_COLUMNS, rows, title)
    scaling = f" x scaling factor {result.scaling_factor!r}" if result.scaling_factor != 1.0 else ""
    console.print(
        line(
            f"olympic score (mlperf-logging {result.to_json()['mlperf_logging']} result summarizer's "
            f"_compute_strong_score_standalone): {_minutes(result.olympic_minutes)} minutes{scaling} = "
            f"{_minutes(result.score_minutes)} minutes over {len(result.runs)} runs",
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


def check_submission(
    folder: Annotated[Path, typer.Argument(help="A submission folder (results/, systems/, benchmarks/).")],
    ruleset: Annotated[str, typer.Option("--ruleset", help="The submission's MLPerf Training ruleset.")],
    root: Annotated[Path, typer.Option("--root", envvar="RECORDER_ROOT", help="Where the imported runs go.")] = Path(
        "runs"
    ),
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however narrow the terminal.")] = False,
) -> None:
    """mlperf-logging's package checker on a submission, then every result set imported under --root and
    scored as its result summarizer scores it: one table (system, benchmark, runs, score, scaling, verdict,
    reasons). Exit 0 when the package passes and every set scores, 1 otherwise."""
    import tempfile

    from replay.errors import ImportFileError
    from replay.package_check import HostileSubmissionError, check_package
    from replay.rulesets import get_known

    set_wide(wide)
    get_known(ruleset)
    if not (folder / "results").is_dir():
        raise ImportFileError(f"{folder}: no results/ folder; give a submission folder (results/<system>/<benchmark>)")
    with tempfile.TemporaryDirectory(prefix="check-submission-") as tmp:
        try:
            package = check_package(folder, ruleset, Path(tmp))
        except HostileSubmissionError as e:  # every refused entry on its own error: line, then exit 2
            for refused in e.refused:
                err.print(line(label("error:", "bold red"), refused), highlight=False)
            raise typer.Exit(2) from None
        console.print(package.result.summary(), highlight=False)
        table: list[list[str]] = []
        all_scored = True
        for bench in sorted(package.copy.glob("results/*/*")):
            if bench.is_dir() and any(bench.glob("result_*.txt")):
                all_scored &= _score_result_set(bench, folder / bench.relative_to(package.copy), root, ruleset, table)
    print_fitted(console, SUBMISSION_COLUMNS, table, f"{folder}: training {ruleset}")
    if not (package.result.ok and all_scored):
        raise typer.Exit(1)


def _score_result_set(bench: Path, original: Path, root: Path, ruleset: str, table: list[list[str]]) -> bool:
    """Import one result set of the checked copy `bench` (from its `original` folder) and score it: its row of
    the table; False when it is not imported or not scored."""
    import dataclasses

    from recorder.adapters.mllog_import import import_file
    from recorder.adapters.result_folder import read_result_folder
    from replay.errors import ImportFileError
    from replay.score_runs import score_runs

    copy, folder = bench.parents[2], original.parents[2]
    try:
        checked = read_result_folder(bench)
    except ImportFileError as e:  # e.g. logs of two benchmarks: this set is not scored, the others are
        reason = str(e).replace(str(copy), str(folder))
        table.append([bench.parent.name, bench.name, "-", "-", "-", "not imported", reason])
        return False
    result_set = dataclasses.replace(checked.result_set, folder=str(original))
    for note in checked.notes:
        console.print(line(label("note:", "yellow"), note.replace(str(copy), str(folder))))
    runs = [import_file(original / f.name, root, None, ruleset, result_set).run.path for f in checked.files]
    try:
        [result] = score_runs(runs, None, None, False)
    except RecorderError as e:
        table.append([bench.parent.name, bench.name, str(len(runs)), "-", "-", "not scored", str(e)])
        return False
    verdict = "scored" if result.scored else "not scored"
    if result.rcp is not None:
        verdict += f", RCP {result.rcp.verdict}"
    table.append(
        [
            bench.parent.name,
            bench.name,
            str(len(runs)),
            _minutes(result.score_minutes),
            f"{result.scaling_factor:.4f}",
            verdict,
            "; ".join(result.reasons),
        ]
    )
    return result.scored


def register(app: typer.Typer) -> None:
    app.command()(replay)
    app.command()(score)
    app.command("check-submission")(check_submission)
