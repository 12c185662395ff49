"""Limits on a history query: a time limit, a memory limit, spill files in a private temporary folder, and
Ctrl-C that stops DuckDB.

DuckDB runs a query in C++ without returning to Python, so a SIGINT handler never runs and Ctrl-C would
wait for the query. The query runs in a worker thread instead; the main thread waits in short slices, and on
the deadline or Ctrl-C calls the connection's `interrupt()`, which DuckDB checks between vectors.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from recorder.errors import InputError, RecorderError

if TYPE_CHECKING:
    import duckdb

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 60.0
_POLL_S = 0.1


class QueryTimeoutError(InputError):
    """A query that ran past its time limit (it was interrupted)."""


class QueryInterrupted(RecorderError):
    """Ctrl-C during a query."""

    exit_code = 130


def default_memory_limit() -> str:
    """Half the machine's memory, in DuckDB's syntax: a runaway DISTINCT spills or fails instead of the OOM
    killer ending the process (DuckDB's own default is 80%)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "4GB"
    return f"{max(1, total // 2 // 2**20)}MB"


@dataclass
class SpillFolder:
    """A private temporary folder for DuckDB's spill files, removed when the history is closed."""

    path: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="recorder-query-")))

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def connection_config(spill: SpillFolder, memory_limit: str | None) -> dict[str, str | bool | int | float | list[str]]:
    return {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "temp_directory": str(spill.path),
        "memory_limit": memory_limit or default_memory_limit(),
    }


def run_limited(con: duckdb.DuckDBPyConnection, work: Callable[[], T], timeout_s: float | None) -> T:
    """`work()` (a query on `con`) in a worker thread, interrupted after `timeout_s` (None or 0: no limit)
    or on Ctrl-C. Its exception, if any, is raised here."""
    import duckdb

    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(work())
        except BaseException as e:  # handed to the main thread, which raises it
            failure.append(e)

    worker = threading.Thread(target=target, name="recorder-query", daemon=True)
    worker.start()
    waited = 0.0
    try:
        while worker.is_alive():
            worker.join(_POLL_S)
            waited += _POLL_S
            if timeout_s and waited >= timeout_s and worker.is_alive():
                _stop(con, worker)
                raise QueryTimeoutError(
                    f"query stopped after {timeout_s:g} s (--timeout); narrow it, or raise --timeout (0: no limit)"
                )
    except KeyboardInterrupt:
        _stop(con, worker)
        raise QueryInterrupted("query: interrupted; nothing was changed (the history is read-only)") from None
    if failure:
        if isinstance(failure[0], duckdb.InterruptException) and timeout_s:
            raise QueryTimeoutError(f"query stopped after {timeout_s:g} s (--timeout)") from failure[0]
        raise failure[0]
    return result[0]


def _stop(con: duckdb.DuckDBPyConnection, worker: threading.Thread) -> None:
    """Interrupt until the worker has returned: an interrupt that lands before DuckDB starts executing is
    lost, so it is repeated."""
    while worker.is_alive():
        con.interrupt()
        worker.join(_POLL_S)
