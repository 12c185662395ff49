"""`recorder report`: one self-contained HTML page for a reviewer (one run, or a set of runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recorder.cli.shared.paths import check_output, write_failed
from recorder.cli.shared.signing_keys import UntrustedOkOption, apply_untrusted_ok
from recorder.cli.terminal.output import console


def report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories (one run, or the seeds of a submission).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The HTML file to write.")] = Path("report.html"),
    ruleset: Annotated[
        str | None, typer.Option("--ruleset", help="Ruleset whose facts apply (default: the run's own).")
    ] = None,
    untrusted_ok: UntrustedOkOption = False,
) -> None:
    """Write one HTML file (no network, nothing beside it): verdicts, timeline, tables, charts, the mllog."""
    from recorder.report.page import build_report
    from recorder.report.story import what_happened

    check_output(output, suffixes=(".html", ".htm"))  # before any run is read
    apply_untrusted_ok(untrusted_ok)
    try:
        runs = build_report(run_dirs, output, ruleset)
    except OSError as e:  # a write the checks could not foresee (read-only mount, full disk)
        raise write_failed(output, e) from e
    for f in runs:
        console.print(f"{f.run_id}: {what_happened(f)[0]}", highlight=False)
    console.print(f"wrote {output} ({output.stat().st_size / 1e6:.2f} MB)", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(report)
