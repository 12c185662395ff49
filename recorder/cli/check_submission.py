"""`recorder check-submission`: mlperf-logging's package checker on a submission, then each of its result
sets imported and scored. Only typer and rich at module level: replay's modules load inside the command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recorder.cli.terminal.output import console, err, label, line
from recorder.cli.terminal.tables import Col, minutes_cell, print_fitted, set_wide
from recorder.errors import RecorderError

SUBMISSION_COLUMNS = (
    Col("system", whole=True),
    Col("benchmark", whole=True),
    Col("runs", "right", drop=3),
    Col("score", "right"),
    Col("scaling", "right", drop=2),
    Col("verdict"),
    Col("reasons", drop=1),
)


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

    from replay.checkers.package_check import HostileSubmissionError, check_package
    from replay.errors import ImportFileError
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
    from replay.scorekeeping.score_runs import score_runs

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
            minutes_cell(result.score_minutes),
            f"{result.scaling_factor:.4f}",
            verdict,
            "; ".join(result.reasons),
        ]
    )
    return result.scored


def register(app: typer.Typer) -> None:
    app.command("check-submission")(check_submission)
