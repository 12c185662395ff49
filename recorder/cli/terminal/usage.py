"""Usage errors as one line, the way git, uv and the Hugging Face CLI say them: `error: ...`, the closest
option or command when one is near, exit 2. The parser's own five-line box with a usage line and a frame is
for nobody: a script's log wants one line, a person wants the fix."""

from __future__ import annotations

import re
from difflib import get_close_matches
from typing import Any

# typer carries its own click; its exceptions are the parser's (pinned in requirements.lock)
from typer._click.exceptions import ClickException, MissingParameter, NoArgsIsHelpError, NoSuchOption, UsageError


def _did_you_mean(possibilities: list[str]) -> str:
    if not possibilities:
        return ""
    return "; did you mean " + " or ".join(possibilities) + "?"


def _lowered(message: str) -> str:
    """click's sentence ("No such option: --x", "Missing argument 'RUN_DIR'.") as the rest of a line."""
    message = message.strip().rstrip(".")
    return message[:1].lower() + message[1:] if message[1:2].islower() else message


def usage_message(e: ClickException) -> str:
    """The one line (without `error:`) that says what was wrong with the command line."""
    if isinstance(e, NoSuchOption):
        return f"no such option {e.option_name}" + _did_you_mean(sorted(e.possibilities or []))
    if isinstance(e, UsageError) and e.message.startswith("No such command"):
        return _no_such_command(e)
    if isinstance(e, MissingParameter):
        return _lowered(e.format_message()).replace("'", "")
    text = _lowered(" ".join(e.format_message().split()))
    # "invalid value for '--workers': Value error, ..." -> "invalid value for --workers: ..."
    text = re.sub(r"'(-{1,2}[\w-]+)'", r"\1", text)  # an option by its name, as the help writes it
    return text.replace(": Value error, ", ": ", 1)


def _no_such_command(e: UsageError) -> str:
    name = e.message.split("'", 2)[1] if e.message.count("'") >= 2 else ""
    commands: dict[str, Any] = getattr(e.ctx.command, "commands", {}) if e.ctx is not None else {}
    shown = [n for n, c in commands.items() if not getattr(c, "hidden", False)]
    return f"no such command {name}" + _did_you_mean(get_close_matches(name, shown, n=2))


__all__ = ["NoArgsIsHelpError", "UsageError", "usage_message"]
