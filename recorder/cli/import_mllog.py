"""`recorder import`: finished mllogs (files or result folders) recorded as runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from recorder.cli.shared.paths import check_root
from recorder.cli.shared.signing_keys import SigningKeyOption, apply_signing_key
from recorder.cli.terminal.output import console, label, line, warning
from recorder.cli.terminal.progress import progress


def import_(
    paths: Annotated[
        list[Path], typer.Argument(help="mllog files (result_N.txt, *.out, ...) or result folders (result_*.txt).")
    ],
    root: Annotated[Path, typer.Option("--root", envvar="RECORDER_ROOT", help="Where the new runs go.")] = Path("runs"),
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

    check_root(root)  # a root that is a file, or under a missing folder, before anything is read
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
    jobs = _not_yet_imported(jobs, root) if run_id is None else jobs
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


def _not_yet_imported(jobs: list[tuple[Path, Any]], root: Path) -> list[tuple[Path, Any]]:
    """`jobs` less the files an earlier import of the same paths already made runs of, each named once."""
    from recorder.cli.shared.import_resume import already_imported

    left = []
    for job in jobs:
        done = already_imported(job[0], root) if job[0].is_file() else None
        if done is None:
            left.append(job)
        else:
            console.print(f"{job[0]}: already imported as {done}: skipped")
    return left


def register(app: typer.Typer) -> None:
    app.command("import")(import_)
