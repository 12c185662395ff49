"""The `recorder` command line. Each package registers its own commands; heavy imports stay lazy.

Exit codes: 0 success, 1 the data says no, 2 usage or input error.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console
from rich.markup import escape

from recorder.errors import RecorderError

app = typer.Typer(
    name="recorder",
    help="Event-sourced run recorder with replayable MLPerf scoring (qwen35_397b_grpo, MLPerf Training v6.1).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, soft_wrap=True)

# Modules with a `register(app)` function. Each imports only typer at module level.
COMMAND_MODULES = [
    "recorder.log_commands",
    "trainer.commands",
    "evaluator.commands",
    "recorder.history_commands",
    "recorder.adoption_commands",
    "replay.commands",
]

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    """Entry point. Typer handles usage errors (exit 2); our errors become a message and their exit code."""
    try:
        app()
    except RecorderError as e:
        err.print(f"[bold red]error:[/] {escape(str(e))}", highlight=False)
        sys.exit(e.exit_code)
