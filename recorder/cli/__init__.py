"""The `recorder` command line: one module per command (or per noun: `history`, `zero_shot`, `replay`),
each parsing options and calling the library; the helpers they share are `_`-prefixed.

Exit codes: 0 success, 1 the data says no, 2 usage or input error, 130 interrupted. Heavy imports (torch,
duckdb, the checkers, rich) stay inside the commands, so `recorder --help` and a refused command line start
fast. Usage errors are one `error:` line (recorder.cli.terminal.usage); help speaks in metavars
(recorder.cli.terminal.help).
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from typing import Annotated

import typer

from recorder import __version__
from recorder.cli import (
    check_submission,
    compact,
    events,
    export,
    history,
    import_checkpoints,
    import_mllog,
    keygen,
    remove,
    replay,
    report,
    train,
    verify,
)
from recorder.cli.evaluation import audit, evals, evaluate, zero_shot
from recorder.cli.shared.interrupt import interruptible
from recorder.cli.terminal.closed_pipe import quiet_when_the_reader_leaves
from recorder.cli.terminal.help import HELP_OPTIONS, spelled
from recorder.cli.terminal.json_output import print_error_document, wants_json
from recorder.cli.terminal.output import cut, say, set_quiet
from recorder.cli.terminal.quiet import quiet_other_libraries
from recorder.cli.terminal.stdout import StdoutWriteError, stdout_failures_said
from recorder.cli.terminal.usage import NoArgsIsHelpError, UsageError, usage_message
from recorder.errors import RecorderError
from recorder.interrupts import STARTING

app = typer.Typer(
    name="recorder",
    help="Event-sourced run recorder with replayable MLPerf scoring (qwen35_397b_grpo, MLPerf Training v6.1).",
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: no rich import, no box, the width of the terminal
    context_settings={"help_option_names": HELP_OPTIONS},
)

for _group in (
    verify,
    events,
    keygen,
    train,
    evaluate,
    evals,
    zero_shot,
    audit,
    history,
    compact,
    remove,
    import_checkpoints,
    export,
    replay,
    check_submission,
    import_mllog,
    report,
):
    _group.register(app)
for _command in app.registered_commands:  # Ctrl-C anywhere in a command: one line, exit 130
    if _command.callback is not None:
        _name = _command.name or _command.callback.__name__.replace("_", "-")
        _inner = quiet_when_the_reader_leaves(_command.callback)
        _command.callback = interruptible(_name, stdout_failures_said(_inner))


def _print_version(value: bool) -> None:
    if value:
        print(f"recorder {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("-q", "--quiet", help="Errors only on stderr: no progress, notes or warnings.")
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("-v", "--verbose", help="Also the libraries' own logs and progress bars (transformers, Ray)."),
    ] = False,
) -> None:
    """Event-sourced run recorder with replayable MLPerf scoring (qwen35_397b_grpo, MLPerf Training v6.1)."""
    if quiet and verbose:
        raise typer.BadParameter("-q and -v ask for less and for more: give one")
    set_quiet(quiet)  # before the command prints


def run_command_line(args: list[str]) -> int:
    """The command line `args` run through typer, a usage error said in one line; the exit status."""
    command = spelled(typer.main.get_command(app))
    try:
        done = command.main(args, prog_name="recorder", standalone_mode=False)
    except NoArgsIsHelpError as e:  # `recorder` alone: the help, as a usage error (exit 2)
        e.show()
        return e.exit_code
    except UsageError as e:
        _error(usage_message(e), e.exit_code, args)
        return e.exit_code
    except typer.Abort:  # end of input at a prompt
        say("aborted", "error:")
        return 1
    return done if isinstance(done, int) else 0  # typer.Exit(code) comes back as its code


def verbose_asked(args: list[str]) -> bool:
    """Whether `-v`/`--verbose` is among the options before the command (where `recorder -v CMD` takes it)."""
    for arg in args:
        if not arg.startswith("-"):
            return False
        if arg in ("-v", "--verbose"):
            return True
    return False


def _error(message: str, code: int, args: list[str]) -> None:
    """One `error:` line on stderr; and, when the command line asked for JSON, the error as JSON on stdout."""
    say(message, "error:")
    if wants_json(args):
        print_error_document(message, code)


def _too_long(e: OSError) -> str:
    name = os.fsdecode(e.filename) if isinstance(e.filename, (str, bytes)) else "a path"
    return (
        f"{cut(name, 80)}: too long for the filesystem (a name at most 255 bytes, a path at most 4096); "
        "give a shorter path"
    )


def main() -> None:
    """Entry point. Usage errors: one line, exit 2; our errors become a message and their exit code."""
    if not verbose_asked(sys.argv[1:]):
        quiet_other_libraries()  # before a command imports transformers or Ray
    try:
        code = run_command_line(sys.argv[1:])
    except KeyboardInterrupt:  # while typer builds the command line, before any command ran
        say(STARTING)
        sys.exit(130)
    except OSError as e:
        if e.errno != errno.ENAMETOOLONG:
            raise
        _error(_too_long(e), 2, sys.argv[1:])  # a typed path the filesystem cannot hold is input, not a crash
        sys.exit(2)
    except RecorderError as e:
        if e.exit_code == 130:  # Ctrl-C: what was stopped, not an error
            say(str(e))
        elif isinstance(e, StdoutWriteError):  # stdout is what failed: stderr alone carries it
            say(str(e), "error:")
        else:
            _error(str(e), e.exit_code, sys.argv[1:])
        if getattr(e, "abandons_process", False):  # work still winding down (an interrupted query): never wait for it
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(e.exit_code)
        sys.exit(e.exit_code)
    finally:
        # The command has finished or said why not: a Ctrl-C while the interpreter shuts down (Ray, torch and
        # rich threads joining) must not turn its exit status into death by SIGINT.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(code)
