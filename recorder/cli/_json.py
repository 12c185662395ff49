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
