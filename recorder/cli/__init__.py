"""The `recorder` command line: one module per command group, each parsing options and calling the library.

Exit codes: 0 success, 1 the data says no, 2 usage or input error. Heavy imports (torch, duckdb, the
checkers) stay inside the commands, so `recorder --help` starts fast.
"""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from recorder.cli import adapters, evaluate, history, log, replay, report, train
from recorder.cli.output import err
from recorder.errors import RecorderError

app = typer.Typer(
    name="recorder",
    help="Event-sourced run recorder with replayable MLPerf scoring (qwen35_397b_grpo, MLPerf Training v6.1).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _group in (log, train, evaluate, history, adapters, replay, report):
    _group.register(app)


def main() -> None:
    """Entry point. Typer handles usage errors (exit 2); our errors become a message and their exit code."""
    try:
        app()
    except RecorderError as e:
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        sys.exit(e.exit_code)
