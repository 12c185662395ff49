"""The history's exceptions: a query or a root it cannot answer (input errors: exit 2)."""

from __future__ import annotations

from recorder.errors import InputError


class HistoryError(InputError):
    """Base of the history's errors: a query or a root it cannot answer."""


class QueryRefusedError(HistoryError):
    """A statement that would write, attach, copy, install or change settings."""


class QueryError(HistoryError):
    """SQL that DuckDB cannot parse or bind (a typo, an unknown view or column)."""
