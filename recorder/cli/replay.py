"""`recorder replay`, `recorder import`, `recorder score`. Only typer and rich at module level: replay's
modules (and mlperf-logging) are imported inside the commands, so `recorder --help` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from recorder.cli.output import console, label, line, warning
from recorder.cli.paths import check_output, write_failed
from recorder.cli.progress import progress, working
from recorder.cli.signing import SigningKeyOption, apply_signing_key
from recorder.cli.tables import Col, print_fitted, set_wide
from recorder.errors import RecorderError
from recorder.rules import not_comparable
from recorder.run import RunDir, derived_dir, write_derived

if TYPE_CHECKING:
    from replay.check import CheckResult
    from replay.derive import Derivation
    from replay.rulesets import KnownRuleset
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
        "ge-threshold, as-recorded. Default: as-recorded for imported logs, official otherwise.",
    ),
]


def _minutes(m: float | None) -> str:
    return "-" if m is None else f"{m:.3f}"


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
) -> None:
    """Derive the run's mllog from its events under an interpretation of the rule (and check it)."""
    from recorder.errors import InputError
    from replay.derive import derive_from
    from replay.errors import NoCheckpointError, NotEvaluatedError
    from replay.interpretations import AS_RECORDED, get_interpretation
    from replay.rulesets import get_known, ruleset_for_run
    from replay.run_scan import scan_verified
    from replay.scores import compute_scores, write_rows
    from replay.trust import NOT_COMPARABLE, UNVERIFIED, mark_rows, verified

    # Every option is checked before the run is read or anything written.
    if compare and (interpretation or output):
        raise typer.BadParameter("--compare prints every interpretation; drop --interpretation/-o")
    if ruleset is not None:
        get_known(ruleset)
    if interpretation is not None:
        get_interpretation(interpretation)
    if output is not None:
        check_output(output)
    with working(f"replay: verifying and reading {run_dir}"):
        unverified, report = verified(run_dir, force)  # refuses (exit 1) unless --force
        scan, torn, skipped = scan_verified(report)  # an intact run is streamed: the facts are kept, not the events
    tl = scan.timeline
    run = report.run
    default = "as-recorded" if scan.imported else "official"
    as_recorded = (interpretation or default) == AS_RECORDED and not compare
    # refuses before anything is written; as recorded, the checker may judge a log whose benchmark the run's
    # own ruleset does not know (the data says no: exit 1 after the checkers, with why)
    known = ruleset_for_run(ruleset, tl.ruleset, tl.benchmark, tl.division, lenient=as_recorded and ruleset is None)
    mismatch = known.benchmark_problem(tl.benchmark, tl.division)
    for entry in skipped:
        console.print(warning(f"{run.events}/{entry}"))
    # as-recorded needs the imported lines; a run with both (an imported mllog plus its checkpoints) has them.
    if interpretation == AS_RECORDED and not tl.mllog_segments:
        raise InputError(
            f"{run_dir}: as-recorded replays imported logs, and this run has no imported mllog lines: "
            "use --interpretation official, or --compare"
        )
    for problem in unverified:
        console.print(line(label(f"{UNVERIFIED}:", "bold red"), str(problem)))
    for tail in torn:  # a writer died mid-append: its complete events are replayed, the rest is gone
        console.print(warning(str(tail)))
    for jump in scan.clock_steps:
        console.print(warning(str(jump)))
    resumed = scan.resumed
    for r in resumed:
        console.print(
            line(
                label("resumed:", "yellow"),
                f"{r}: its history is kept, but a resumed run is not a valid timed MLPerf run",
            )
        )
    target = scan.target
    why_not = not_comparable(target)
    if why_not is not None:
        console.print(
            line(
                label(f"{NOT_COMPARABLE}:", "yellow"),
                f"{why_not}; eval, the history and replay judge passing by the run's own target, and the "
                f"{known.name} checker by the ruleset's",
            )
        )

    def with_marks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return mark_rows(rows, unverified=unverified, resumed=resumed, target=target)

    if compare:
        rows = with_marks(compute_scores(run, known.name, check=check, scan=scan))
        write_rows(run, rows, scan.heads)
        _compare_table(rows)
        return
    name = interpretation or default
    get_interpretation(name)
    try:
        d = derive_from(tl, scan.source, known.name, name)
    except NotEvaluatedError as e:  # the hint repeats the path as the user typed it
        raise NotEvaluatedError(f"{e}; evaluate them: recorder eval {run_dir}") from None
    except NoCheckpointError:  # the history shows `no checkpoint` too, without waiting for `compact`
        write_rows(run, with_marks(compute_scores(run, ruleset, check=False, scan=scan)), scan.heads)
        raise
    marked = f".{UNVERIFIED}" if unverified else ""
    if output is None:  # under derived/: never through a symlink out of the run
        path = derived_dir(run) / f"result_{name}{marked}.txt"
        with working(f"replay: writing {path.name}"):
            write_derived(path, d.chunks())
    else:
        path = output
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as f:
                f.writelines(d.chunks())
        except OSError as e:
            raise write_failed(path, e) from e
    if unverified and output is not None:  # a chosen -o name gets a sidecar, so the mark sits next to the file
        path.with_name(path.name + f".{UNVERIFIED}").write_text(
            "derived with --force from a run that fails verification:\n" + "\n".join(unverified) + "\n"
        )
    kept = (run, path) if output is None else None  # a log under derived/: its RCP verdict is kept there
    with working("replay: mlperf-logging's checkers on the derived log"):
        checks = _checks(d, known, tl.benchmark, tl.division, kept, mismatch) if check else []
    done = {name: (d, checks[0] if checks else None)}
    # the checker judges only what --check asks about: each other interpretation's verdict is left null
    rows = with_marks(compute_scores(run, ruleset, check=False, done=done, scan=scan))
    write_rows(run, rows, scan.heads)
    passing = f"passing step {d.passing_step}" if d.passing_step is not None else "no passing step"
    tags = (
        ([label(UNVERIFIED, "bold red")] if unverified else [])
        + ([label("resumed", "yellow")] if resumed else [])
        + ([label(NOT_COMPARABLE.lower(), "yellow")] if why_not is not None else [])
    )
    console.print(
        line(
            *tags,
            f"{name}: {d.status}, {passing}, {_minutes(d.minutes)} minutes ({d.why}); {len(d.lines)} lines -> {path}",
        )
    )
    if d.missing_keys:
        console.print(
            warning(
                f"the run recorded no {', '.join(d.missing_keys)} (mllog_config): "
                f"the {known.name} checker requires them"
            )
        )
    for c in checks:
        console.print(c.summary(), highlight=False)
    if mismatch is not None and not check:  # as recorded, the log's own lines need no checker to be replayed
        console.print(line(label("note:", "yellow"), f"{mismatch}; --check says what the checker can judge of it"))
    if not all(c.ok and c.error is None and (c.ran or c.tool != "compliance checker") for c in checks):
        raise typer.Exit(1)


def _checks(
    d: Derivation,
    known: KnownRuleset,
    benchmark: str | None,
    division: str | None,
    kept: tuple[RunDir, Path] | None,
    mismatch: str | None = None,
) -> list[CheckResult]:
    """The compliance checker (it follows the log's own division), and the RCP checker where the ruleset has
    RCPs for the benchmark and the division is not open (RCPs bind the closed division only). `kept`: the run
    and the derived file holding `d`'s lines, whose RCP verdict replay.rcp_cache keeps (`recorder report` reads it).
    `mismatch`: why the ruleset does not know the log's benchmark; the checker then cannot run, and says so."""
    from recorder.rules import BENCHMARK
    from replay.check import CheckResult, compliance_lines, mlperf_logging_version, rcp, rcp_not_run

    benchmark = benchmark or BENCHMARK  # a run that states no benchmark is the recorder's own
    if mismatch is not None:
        why = f"{mismatch}, so it has no rules to judge this log by"
        return [CheckResult("compliance checker", known.name, False, (why,), mlperf_logging_version(), ran=False)]
    checks = [compliance_lines(d.lines, known.name)]
    if not known.has_rcps(benchmark):
        checks.append(rcp_not_run(known.name, f"training {known.name} has no RCPs for {benchmark}"))
    elif division == "open":
        checks.append(rcp_not_run(known.name, "open division: RCPs bind the closed division only"))
    elif kept is not None:
        from replay.rcp_cache import cached_rcp

        checks.append(cached_rcp(*kept, known.name)[0])
    else:
        checks.append(rcp([d.text()], known.name))  # -o: a log outside the run, read whole
    return checks


def _compare_table(rows: list[dict[str, Any]]) -> None:
    from replay.compare import COLUMNS, compare_table

    t = compare_table(rows)
    table = Table(title=t.title)
    for col in COLUMNS:
        table.add_column(col, no_wrap=True)
    for row in t.rows:
        table.add_row(*row)
    console.print(table)
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


def import_(
    paths: Annotated[
        list[Path], typer.Argument(help="mllog files (result_N.txt, *.out, ...) or result folders (result_*.txt).")
    ],
    root: Annotated[Path, typer.Option("--root", help="Where the new runs go.")] = Path("runs"),
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run id (one file only).")] = None,
    ruleset: Annotated[
        str | None,
        typer.Option("--ruleset", help="The logs' MLPerf Training ruleset: recorded, and the default of replay/score."),
    ] = None,
    signing_key: SigningKeyOption = None,
) -> None:
    """Import mllogs as runs: every ':::MLLOG' line kept verbatim, plus the kinds replay and history read.
    A result folder brings its scaling.json and its system description (../../systems/<system>.json)."""
    from recorder.adapters.mllog_import import ResultSet, import_file
    from recorder.adapters.result_folder import read_result_folder
    from replay.errors import ImportFileError
    from replay.rulesets import get_known

    if ruleset is not None:
        get_known(ruleset)  # an unknown name is refused before anything is imported
    apply_signing_key(signing_key)
    jobs: list[tuple[Path, ResultSet | None]] = []
    for path in paths:
        if path.is_dir():
            folder = read_result_folder(path)
            jobs += [(f, folder.result_set) for f in folder.files]
            for note in folder.notes:
                console.print(line(label("note:", "yellow"), note))
            if folder.result_set.scaling_file:
                console.print(
                    f"{path}: scaling factor {folder.result_set.scaling_factor!r} ({folder.result_set.scaling_file})",
                    highlight=False,
                )
        else:
            jobs.append((path, None))
    if run_id and len(jobs) > 1:
        raise ImportFileError(f"--run-id names one run, and {len(jobs)} files were given: drop --run-id")
    sizes = [p.stat().st_size if p.is_file() else 0 for p, _ in jobs]  # a path that is no file: import says so
    with progress(f"import: {len(jobs)} file(s)", sum(sizes), unit="bytes") as advance:
        for (path, result_set), size in zip(jobs, sizes, strict=True):
            report = import_file(path, root, run_id, ruleset, result_set)
            advance(size)
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(report.kinds.items()))
            console.print(f"{path} -> {report.run.path}: {report.lines} mllog lines; {kinds}", highlight=False)
            for note in report.warnings:
                console.print(warning(f"{path}: {note}"))
            for line_no, why in report.malformed:
                console.print(warning(f"{path}:{line_no}: {why} (kept verbatim as an mllog_line event)"))


FormatOpt = Annotated[str, typer.Option("--format", help="table or json.")]


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
) -> None:
    """The result summarizer's strong-scaling score of each set of runs (a result folder, else a global batch
    size): the olympic average of compliant runs times the scaling factor, each run's verdict and reasons.
    Exit 0 when every set scores, 1 when one does not."""
    import json

    from replay.score_runs import score_runs

    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"--format is table or json, not {fmt!r}")
    set_wide(wide)
    sets = score_runs(run_dirs, ruleset, interpretation, force)
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
    root: Annotated[Path, typer.Option("--root", help="Where the imported runs go.")] = Path("runs"),
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however narrow the terminal.")] = False,
) -> None:
    """mlperf-logging's package checker on a submission, then every result set imported under --root and
    scored as its result summarizer scores it: one table (system, benchmark, runs, score, scaling, verdict,
    reasons). Exit 0 when the package passes and every set scores, 1 otherwise."""
    import dataclasses
    import tempfile

    from recorder.adapters.mllog_import import import_file
    from recorder.adapters.result_folder import read_result_folder
    from replay.errors import ImportFileError
    from replay.package_check import check_package
    from replay.rulesets import get_known
    from replay.score_runs import score_runs

    set_wide(wide)
    get_known(ruleset)
    if not (folder / "results").is_dir():
        raise ImportFileError(f"{folder}: no results/ folder; give a submission folder (results/<system>/<benchmark>)")
    with tempfile.TemporaryDirectory(prefix="check-submission-") as tmp:
        package = check_package(folder, ruleset, Path(tmp))
        console.print(package.result.summary(), highlight=False)
        table: list[list[str]] = []
        all_scored = True
        for bench in sorted(package.copy.glob("results/*/*")):
            if not bench.is_dir() or not any(bench.glob("result_*.txt")):
                continue
            original = folder / bench.relative_to(package.copy)
            try:
                checked = read_result_folder(bench)
            except ImportFileError as e:  # e.g. logs of two benchmarks: this set is not scored, the others are
                all_scored = False
                reason = str(e).replace(str(package.copy), str(folder))
                table.append([bench.parent.name, bench.name, "-", "-", "-", "not imported", reason])
                continue
            result_set = dataclasses.replace(checked.result_set, folder=str(original))
            for note in checked.notes:
                console.print(line(label("note:", "yellow"), note.replace(str(package.copy), str(folder))))
            runs = [import_file(original / f.name, root, None, ruleset, result_set).run.path for f in checked.files]
            try:
                [result] = score_runs(runs, None, None, False)
            except RecorderError as e:
                all_scored = False
                table.append([bench.parent.name, bench.name, str(len(runs)), "-", "-", "not scored", str(e)])
                continue
            all_scored &= result.scored
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
    print_fitted(console, SUBMISSION_COLUMNS, table, f"{folder}: training {ruleset}")
    if not (package.result.ok and all_scored):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(replay)
    app.command("import")(import_)
    app.command()(score)
    app.command("check-submission")(check_submission)
