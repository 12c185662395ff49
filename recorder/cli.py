"""The `recorder` command line. Each package registers its own commands; heavy imports stay lazy.

Exit codes: 0 success, 1 the data says no, 2 usage or input error.
"""

from __future__ import annotations

import importlib
import sys

import click
import typer
from rich.console import Console

from recorder.errors import RecorderError

app = typer.Typer(
    name="recorder",
    help="Event-sourced run recorder with replayable MLPerf scoring (qwen35_397b_grpo, MLPerf Training v6.1).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)

# Modules with a `register(app)` function. Each imports only typer at module level.
COMMAND_MODULES = [
    "recorder.log_commands",
]

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    """Entry point: runs the app and maps exceptions to exit codes (never a traceback for bad input)."""
    try:
        code = app(standalone_mode=False)
    except RecorderError as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
