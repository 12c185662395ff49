"""Ctrl-C in a command says what it kept (`recorder.cli.shared.interrupt.KEPT`): every command the command line
registers has its own line, read from the app itself, so a new command cannot be added without one. A
command whose own module writes a file (it calls one of the project's writers) and whose line says nothing
was changed must say why its file is whole or absent."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from recorder.cli import app
from recorder.cli.shared.interrupt import KEPT

# The calls that create or replace a file: the project's own writers (recorder.output, recorder.store.run) and the
# standard ones a command module could call directly.
WRITERS = frozenset(
    {"write_output", "output_file", "write_derived", "LogWriter", "write_text", "write_bytes", "savefig", "mkdir"}
)
SAYS_UNCHANGED = "nothing was changed"
SAYS_WHY = "whole or not at all"


def command_name(command: Any) -> str:
    """A registered command's name as the command line spells it (recorder.cli builds it the same way)."""
    return str(command.name or command.callback.__name__.replace("_", "-"))


def _called(node: ast.AST) -> tuple[set[str], set[str]]:
    """(functions called by name, every name called: `f()`, `x.f()`, open(..., "w") as a writer)."""
    by_name, names = set(), set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if isinstance(func, ast.Name):
            by_name.add(name)
        if name == "open" and _opens_for_writing(call):
            name = "write_text"  # open(path, "w"): a writer like the others
        names.add(name)
    return by_name, names


def _opens_for_writing(call: ast.Call) -> bool:
    modes = [a for a in call.args[1:2]] + [k.value for k in call.keywords if k.arg == "mode"]
    return any(isinstance(m, ast.Constant) and any(c in str(m.value) for c in "wax+") for m in modes)


def writes_files(source: str, function: str) -> bool:
    """Whether `function` in module `source`, or a function of that module it calls (at any depth), calls a
    writer."""
    functions = {n.name: n for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    seen, todo = set(), [function]
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        by_name, called = _called(functions[name])
        if called & WRITERS:
            return True
        todo += sorted(by_name & functions.keys())
    return False


def kept_problems(group: typer.Typer, kept: dict[str, str], source_of: Callable[[Any], str]) -> list[str]:
    """Each registered command without its own KEPT line, and each whose module writes a file while its line
    says nothing was changed without saying why."""
    problems = []
    for command in group.registered_commands:
        name = command_name(command)
        callback = inspect.unwrap(command.callback)  # type: ignore[arg-type]
        line = kept.get(name)
        if line is None:
            problems.append(f"{name}: no KEPT line")
        elif writes_files(source_of(callback), callback.__name__) and SAYS_UNCHANGED in line and SAYS_WHY not in line:
            problems.append(f"{name}: writes a file, and its KEPT line says {SAYS_UNCHANGED!r} without why")
    return problems


def _module_source(callback: Any) -> str:
    return Path(inspect.getsourcefile(callback) or "").read_text(encoding="utf-8")


def test_every_command_has_its_kept_line() -> None:
    assert kept_problems(app, KEPT, _module_source) == []
    assert set(KEPT) == {command_name(c) for c in app.registered_commands}  # no line for a command gone


def test_the_check_sees_a_command_without_a_line_and_one_that_writes() -> None:
    source = """
def export(out):
    _write(out)

def _write(out):
    with open(out, "wb") as f:
        f.write(b"")

def listing():
    print("read only")
"""
    group = typer.Typer()
    exec(compile(source, "<commands>", "exec"), namespace := {})
    group.command()(namespace["export"])
    group.command()(namespace["listing"])
    assert writes_files(source, "export") and not writes_files(source, "listing")
    problems = kept_problems(group, {"listing": "nothing was changed"}, lambda _: source)
    assert problems == ["export: no KEPT line"]
    problems = kept_problems(group, {"export": "nothing was changed", "listing": "x"}, lambda _: source)
    assert problems == [f"export: writes a file, and its KEPT line says {SAYS_UNCHANGED!r} without why"]
