"""The SQL sandbox a history query runs in. Read-only is enforced twice: only one SELECT-like statement is
accepted (`read_only_statement`), and once the views are built the connection loses file-system access
(but the compacted files the views read) and its configuration is locked (`lock_down`), so
`read_csv('/etc/passwd')` or `ATTACH` inside a query fail too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recorder.history.errors import QueryError, QueryRefusedError

if TYPE_CHECKING:
    import duckdb

# Statements a query may be; everything else (INSERT, CREATE, COPY, ATTACH, SET, INSTALL, ...) is refused.
# DuckDB parses DESCRIBE, SHOW and SUMMARIZE as SELECT statements: reads, so they run (`DESCRIBE runs`).
_READ_ONLY = ("SELECT", "EXPLAIN")


def first_line(e: Exception) -> str:
    """A DuckDB error's first paragraph on one line (what the user is shown)."""
    return " ".join(str(e).split("\n\n")[0].split())


def read_only_statement(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """`sql`, when it is exactly one read-only statement (SELECT, EXPLAIN, PIVOT, and DuckDB's SELECT-like
    DESCRIBE, SHOW, SUMMARIZE); else QueryError (not SQL, several statements) or QueryRefusedError."""
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(f"malformed SQL: {first_line(e)}") from e
    if len(statements) != 1:
        raise QueryError(f"give exactly one SQL statement (got {len(statements)})")
    kind = statements[0].type.name
    if kind == "MULTI" and _first_word(sql) == "PIVOT":  # a PIVOT expands to an enum of its ON values plus a SELECT
        return sql
    if kind not in _READ_ONLY:
        raise QueryRefusedError(
            f"refused: {kind} statement; `recorder query` is read-only (SELECT, EXPLAIN, PIVOT, DESCRIBE, SHOW, "
            "SUMMARIZE)"
        )
    return sql


def _first_word(sql: str) -> str:
    """The statement's first keyword, past whitespace, comments and opening parentheses."""
    text = sql
    while True:
        text = text.lstrip().lstrip("(")
        if text.startswith("--"):
            text = text.partition("\n")[2]
        elif text.startswith("/*"):
            text = text.partition("*/")[2]
        else:
            break
    return text.split(None, 1)[0].upper() if text.split() else ""


def sql_list(items: list[str]) -> str:
    """`items` as a SQL list of quoted strings."""
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in items) + "]"


def lock_down(con: duckdb.DuckDBPyConnection, files: list[str]) -> None:
    """No file access but the compacted files the views read, and no way to change that back."""
    if files:
        con.execute(f"SET allowed_paths = {sql_list(files)}")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
