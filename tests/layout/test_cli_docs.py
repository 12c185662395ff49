"""docs/cli.md lists every command `recorder --help` shows, and every option each command's `--help` shows,
in its "Every command" block: a new option is documented where a reader looks first."""

from __future__ import annotations

import re

import typer

from recorder.cli import app
from tests.helpers import REPO


def commands() -> dict[str, list[list[str]]]:
    """Each command `--help` shows, with the options its `--help` shows (each as its spellings: any of them
    documents it), --help itself left out."""
    group = typer.main.get_command(app)  # typer's own click: duck-typed, not isinstance
    out = {}
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        if command.hidden:
            continue
        options = []
        for p in command.params:
            if p.param_type_name == "option" and not getattr(p, "hidden", False) and "--help" not in p.opts:
                options.append([*p.opts, *p.secondary_opts])
        out[name] = options
    return out


def documented(block: str) -> dict[str, str]:
    """Each command's entry in the block: its `recorder NAME` line and the indented lines after it."""
    entries: dict[str, str] = {}
    name = None
    for line in block.splitlines():
        if m := re.match(r"recorder ([a-z-]+)", line):
            name = m[1]
            entries[name] = entries.get(name, "") + line
        elif name is not None and line.startswith(" "):
            entries[name] += line
    return entries


def every_command_block() -> str:
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("## Every command", 1)[1]
    return section.split("```", 2)[1]


def _named(spelling: str, entry: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(spelling)}(?![\w-])", entry) is not None


def undocumented(shown: dict[str, list[list[str]]], entries: dict[str, str]) -> list[str]:
    missing = []
    for name, options in shown.items():
        entry = entries.get(name)
        if entry is None:
            missing.append(f"recorder {name}")
            continue
        missing += [f"recorder {name} {o[0]}" for o in options if not any(_named(s, entry) for s in o)]
    return missing


def test_every_command_and_option_help_shows_is_in_cli_md() -> None:
    entries = documented(every_command_block())
    assert undocumented(commands(), entries) == [], "add them to docs/cli.md's 'Every command' block"


def test_the_check_sees_a_missing_command_and_option() -> None:
    entries = documented("recorder runs     [--root DIR]\nrecorder eval RUN [--all]\n                  [--workers N]")
    assert undocumented({"runs": [["--root"]], "eval": [["--all"], ["-w", "--workers"]]}, entries) == []
    assert undocumented({"runs": [["--root"], ["--wide"]], "collect": []}, entries) == [
        "recorder runs --wide",
        "recorder collect",
    ]
