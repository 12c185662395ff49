"""`--format json`: one JSON document on stdout, whole, for scripts (`jq`, `json.load`). Text that is not
UTF-8 (a file name's odd bytes) is escaped as JSON escapes it (`\udcff`), never dropped; warnings and
errors stay on stderr, so stdout parses."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal

import typer

FormatOption = Annotated[
    Literal["table", "json"],
    typer.Option("--format", help="table, or json: one document on stdout (its fields: docs/cli.md)."),
]


def print_document(document: Any) -> None:
    """`document` as one JSON text on stdout (ASCII: odd bytes in a path come out escaped, never a crash)."""
    sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")
    sys.stdout.flush()


def wants_json(args: list[str]) -> bool:
    """Whether the command line asks for JSON (`--format json` or `--format=json`)."""
    return "--format=json" in args or any(a == "--format" and b == "json" for a, b in zip(args, args[1:], strict=False))


def print_error_document(message: str, exit_code: int) -> None:
    """The error of a command asked for JSON, as a JSON object on stdout: `{"error": ..., "exit_code": ...}`,
    so a script reading stdout gets a document whatever happened (the `error:` line is on stderr too)."""
    stdout = sys.stdout
    if stdout is None:  # no stdout (`>&-`): the line on stderr is all there is
        return
    try:
        stdout.write(json.dumps({"error": message, "exit_code": exit_code}) + "\n")
        stdout.flush()
    except OSError:  # stdout is what failed: the line on stderr said so
        pass
