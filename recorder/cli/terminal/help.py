"""Help in the words users know from other command lines: an argument by its name in capitals (`RUN_DIR`),
an option's value by what it is (`N`, `X`, `PATH`, `KEY=VALUE`, `{on|off}`, else the option's name), never a
Python type (`<list[str]>`, `<bool>`). The parameters typer builds are given these spellings once, when
the command line is built (`spelled`)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from typer._click.decorators import help_option
from typer._click.exceptions import BadParameter, MissingParameter
from typer.core import TyperArgument, TyperCommand, TyperOption

HELP_OPTIONS = ["-h", "--help"]
# An option's help written from a table when the help is shown, by the option's first spelling: the table's
# module loads what listing the commands must not (tests/layout/test_startup.py); its declared help stays a
# placeholder until then.
HELP_WHEN_SHOWN: dict[str, Callable[[], str]] = {}
# typer's own type label -> the metavar a reader expects
_BY_TYPE = {"int": "N", "int range": "N", "float": "X", "float range": "X", "path": "PATH", "list[path]": "PATH"}
# options whose value has a shape of its own
_BY_NAME = {
    "--set": "KEY=VALUE",
    "--steps": "S1,S2,...",
    "--tasks": "TASK,...",
    "--ray-address": "ADDRESS",
    "--memory-limit": "SIZE",
    "--command": "'COMMAND'",
}


def metavar_for(option_name: str, type_label: str) -> str:
    """The value's placeholder from typer's type label (`<int>`, `<on|off>`, `<str>`) and the option's name."""
    if option_name in _BY_NAME:
        return _BY_NAME[option_name]
    bare = type_label.strip("<>").lower()
    if bare in _BY_TYPE:
        return _BY_TYPE[bare]
    if "|" in bare:  # a choice: its words, as `{a|b}` (argparse, git)
        return "{" + re.sub(r"^list\[(.*)\]$", r"\1", bare) + "}"
    return option_name.lstrip("-").replace("-", "_").upper()


def _missing(param: TyperOption | TyperArgument, ctx: Any) -> Any:
    """A parameter not given on the command line, processed as typer would (None, or () for a repeatable
    one) without building its pydantic adapter: that import would cost more than the whole of a command line
    refused a moment later (an unknown option of the subcommand)."""
    value: Any = () if (param.multiple or param.nargs == -1) else None
    if param.required:
        raise MissingParameter(ctx=ctx, param=param)
    return value if param.callback is None else param.callback(ctx, param, value)


def shown(name: str) -> str:
    """A name from the command line as it can be shown: bytes that are not UTF-8 as `\\xff` escapes."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


# (command, parameter) that take a path in any bytes: verify reads a run through Python's own file objects,
# so an honest run under a folder named in another encoding verifies rather than being refused
ANY_BYTES = {("verify", "run_dir")}


def _utf8_only(param: TyperOption | TyperArgument, ctx: Any, value: Any) -> None:
    """Refuse a name whose bytes are not UTF-8, naming it escaped: the runs' files are opened by pyarrow and
    DuckDB, which take UTF-8 names only, and a run id is UTF-8 text (ANY_BYTES excepted)."""
    if (ctx.command.name, param.name) in ANY_BYTES:
        return
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise BadParameter(
                    f"{shown(item)} is not UTF-8 text; rename it (runs and logs are opened by UTF-8 names)",
                    ctx=ctx,
                    param=param,
                ) from None


class _Option(TyperOption):
    def get_help_record(self, ctx: Any) -> tuple[str, str] | None:
        written = HELP_WHEN_SHOWN.get(self.opts[0])
        if written is not None:
            self.help = written()
        return super().get_help_record(ctx)

    def process_value(self, ctx: Any, value: Any) -> Any:
        if value is None:
            return _missing(self, ctx)
        _utf8_only(self, ctx, value)
        return super().process_value(ctx, value)

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.metavar is not None:
            return self.metavar
        return metavar_for(self.opts[0], self.display_type(ctx))


class _Argument(TyperArgument):
    def process_value(self, ctx: Any, value: Any) -> Any:
        if value is None:
            return _missing(self, ctx)
        _utf8_only(self, ctx, value)
        return super().process_value(ctx, value)

    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # its name says what it is; the type would repeat it

    def _usage_display_name(self) -> str:
        name = self.metavar or (self.name or "").upper()
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")


class _PanelledCommand(TyperCommand):
    """A command whose options are listed in sections, one per `rich_help_panel` the options name, after the
    options that name none: a command of thirty options reads as a few short lists. typer draws panels only
    in its rich help, which the plain help (quicker to start) does not import."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        sections: dict[str, list[tuple[str, str]]] = {"Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append(record)
            else:
                sections.setdefault(getattr(param, "rich_help_panel", None) or "Options", []).append(record)
        for title, records in (("Arguments", arguments), *sections.items()):
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)


def spelled(command: Any) -> Any:
    """`command` (and every subcommand) with its parameters spelled as above, and each subcommand listed with
    its whole first paragraph (click would cut it at 45 characters, mid-clause, with `...`)."""
    for sub in getattr(command, "commands", {}).values():
        spelled(sub)
        if sub.short_help is None and sub.help:
            sub.short_help = " ".join(sub.help.split("\n\n", 1)[0].split())
    if getattr(command, "_help_option", "absent") is None:  # made now, to be processed as below (pinned typer)
        help_option(HELP_OPTIONS)(command)
        command._help_option = command.params.pop()
    if type(command) is TyperCommand and any(getattr(p, "rich_help_panel", None) for p in command.params):
        command.__class__ = _PanelledCommand
    for p in [*command.params, getattr(command, "_help_option", None)]:
        if type(p) is TyperOption:
            p.__class__ = _Option
        elif type(p) is TyperArgument:
            p.__class__ = _Argument
            if p.metavar is None:
                p.metavar = (p.name or "").upper()
    return command
