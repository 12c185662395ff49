"""Limits on a history query: a time limit, a memory limit, spill files in a private temporary folder, and
Ctrl-C that stops DuckDB.

DuckDB runs a query in C++ without returning to Python, so a SIGINT handler never runs and Ctrl-C would
wait for the query. The query runs in a worker thread instead; the main thread waits in short slices, and on
the deadline or Ctrl-C calls the connection's `interrupt()`, which DuckDB checks between vectors.

The memory limit is the command's: its resident memory while it queries (what a user sees in `top`). DuckDB's
own limit is what that leaves above what the process already holds when the connection opens (Python,
pyarrow, the live runs' events): `memory_budget`. DuckDB's limit binds its buffer manager, not every
allocation: `SELECT list_value(range(1e8))` builds one value of 800 MB inside a single vector, past the
limit, and never reaches an interrupt check. So the main thread also watches the process's resident memory
against the command's limit, every MEMORY_POLL_S, and a query that does not stop
within GRACE_S of its interrupt (MEMORY_GRACE_S past its memory: such a value grows by about a gigabyte a
second) is abandoned: the command says why and the process ends (QueryAbandoned), instead of waiting for it.
Both limits hold for any query, whatever it allocates: memory to within what it grows in those two slices.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from recorder.errors import InputError, RecorderError

if TYPE_CHECKING:
    import duckdb

T = TypeVar("T")
_POLL_S = 0.1
MEMORY_POLL_S = 0.01  # reading /proc/self/statm costs microseconds; a runaway value grows ~10 MB in a slice
GRACE_S = 2.0  # how long an interrupted query may take to stop before it is abandoned
MEMORY_GRACE_S = 0.01  # the same, past its memory limit: an interrupt check comes within milliseconds or never


class QueryTimeoutError(InputError):
    """A query that ran past its time limit (it was interrupted: the process ends as QueryInterrupted says)."""

    abandons_process = True


class QueryMemoryError(InputError):
    """A query whose process grew past its memory limit (it was interrupted: the process ends as
    QueryInterrupted says)."""

    abandons_process = True


class QueryAbandoned(InputError):
    """A query that did not stop when interrupted: the process must end without waiting for it."""

    abandons_process = True


class MemoryLimitTooLow(InputError):
    """A memory limit below what the command holds before its query."""


class QueryInterrupted(RecorderError):
    """Ctrl-C during a query. The process ends without the interpreter's shutdown: DuckDB's own threads may
    still be winding the interrupted statement down, and one that takes the GIL while Python finalizes is
    ended inside C++, which aborts the process (exit -6, after the line saying it was interrupted)."""

    exit_code = 130
    abandons_process = True


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
    """A private temporary folder for DuckDB's spill files, removed when the history is closed, and also
    when the process is killed by SIGTERM (`kill`, a scheduler's time limit) while it exists."""

    path: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="recorder-query-")))

    def __post_init__(self) -> None:
        _open_spills.add(self.path)
        _remove_on_sigterm()

    def remove(self) -> None:
        _open_spills.discard(self.path)
        shutil.rmtree(self.path, ignore_errors=True)


# The spill folders not yet removed, for the SIGTERM handler.
_open_spills: set[Path] = set()


def _remove_on_sigterm() -> None:
    """Install, once and only where SIGTERM still kills by default (the main thread of a command), a handler
    that removes the open spill folders and then dies of SIGTERM as before: the exit status is unchanged."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def removed_then_killed(signum: int, frame: object) -> None:
        for path in list(_open_spills):
            shutil.rmtree(path, ignore_errors=True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, removed_then_killed)


# Every unit DuckDB's memory_limit reads (its error lists them; the words were found by trying them), in
# any case: a size in one of these is read here as DuckDB reads it. DuckDB also reads "-1", "none" and "50%"
# (no limit, or a share of the machine) and exponents ("1e3MB"): the command's own watch cannot hold those, so
# they are refused rather than handed to DuckDB alone.
_UNITS = {"b": 1, "byte": 1, "bytes": 1}
for _power, (_letter, _word) in enumerate(zip("kmgt", ("kilo", "mega", "giga", "tera"), strict=True), 1):
    _UNITS |= dict.fromkeys((_letter, f"{_letter}b", f"{_word}byte", f"{_word}bytes"), 1000**_power)
    _UNITS[f"{_letter}ib"] = 1024**_power
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]+)\s*")


class MemoryLimitSpelling(InputError):
    """A memory limit that is not a number and a unit this command reads."""


def limit_bytes(limit: str) -> int | None:
    """A memory limit in DuckDB's syntax ("2GB", "512MiB", "256 megabytes", "1.5G") in bytes, read with
    DuckDB's units; None when it is not a positive size in one of them."""
    m = _SIZE.fullmatch(limit)
    unit = _UNITS.get(m.group(2).lower()) if m else None
    return None if m is None or unit is None else int(float(m.group(1)) * unit)


def checked_limit(limit: str) -> int:
    """`limit_bytes(limit)`; MemoryLimitSpelling (one line naming the units) when it is not a size."""
    found = limit_bytes(limit)
    if found is None:
        raise MemoryLimitSpelling(
            f"--memory-limit {limit}: not a size this command can hold a query to; give a number and a unit: KB, "
            "MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. 256MB"
        )
    return found


def resident_bytes() -> int | None:
    """This process's resident memory now (Linux's /proc/self/statm); None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


MIN_QUERY_ROOM = 32 * 2**20  # the least DuckDB is given for its buffers


@dataclass(frozen=True)
class MemoryBudget:
    """The command's memory limit, split between what the process holds and what DuckDB may use."""

    cap: int | None  # resident bytes past which a query is stopped (None: memory cannot be watched here)
    duckdb_limit: str  # DuckDB's memory_limit: the cap less what the process held when it was set


def memory_budget(memory_limit: str | None) -> MemoryBudget:
    """The budget for `--memory-limit` (else half the machine's memory), given what this process holds now.
    MemoryLimitSpelling when it is not a size (`checked_limit`); MemoryLimitTooLow when the limit leaves
    DuckDB less than MIN_QUERY_ROOM."""
    text = memory_limit or default_memory_limit()
    limit, held = checked_limit(text), resident_bytes()
    if held is None:  # no /proc: DuckDB's limit alone
        return MemoryBudget(None, f"{max(1, limit // 2**20)}MiB")
    if limit - held < MIN_QUERY_ROOM:
        need = (held + MIN_QUERY_ROOM) / 2**20
        raise MemoryLimitTooLow(
            f"--memory-limit {text}: the command already holds {held / 2**20:,.0f} MiB before its query; "
            f"give at least {need:,.0f}MiB"
        )
    return MemoryBudget(limit, f"{(limit - held) // 2**20}MiB")


def connection_config(spill: SpillFolder, budget: MemoryBudget) -> dict[str, str | bool | int | float | list[str]]:
    return {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "temp_directory": str(spill.path),
        "memory_limit": budget.duckdb_limit,
    }


def run_limited(
    con: duckdb.DuckDBPyConnection, work: Callable[[], T], timeout_s: float | None, memory_cap: int | None = None
) -> T:
    """`work()` (a query on `con`) in a worker thread, interrupted after `timeout_s` (None or 0: no limit),
    once the process's resident memory passes `memory_cap` bytes (None: no watch), or on Ctrl-C. Its
    exception, if any, is raised here; QueryAbandoned when it does not stop within GRACE_S."""
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
    began = time.monotonic()
    slice_s = MEMORY_POLL_S if memory_cap else _POLL_S
    try:
        while worker.is_alive():
            worker.join(slice_s)
            if timeout_s and time.monotonic() - began >= timeout_s and worker.is_alive():
                why = f"query stopped after {timeout_s:g} s (--timeout); narrow it, or raise --timeout (0: no limit)"
                _stop(con, worker, why)
                raise QueryTimeoutError(why)
            rss = resident_bytes() if memory_cap else None
            if memory_cap and rss is not None and rss > memory_cap and worker.is_alive():
                why = (
                    f"query stopped at {rss / 2**20:,.0f} MiB of memory, past its limit of "
                    f"{memory_cap / 2**20:,.0f} MiB (--memory-limit); narrow it, or raise --memory-limit"
                )
                _stop(con, worker, why, MEMORY_GRACE_S)
                raise QueryMemoryError(why)
    except KeyboardInterrupt:
        _stop(con, worker, "query: interrupted; nothing was changed (the history is read-only)")
        raise QueryInterrupted("query: interrupted; nothing was changed (the history is read-only)") from None
    if failure:
        if isinstance(failure[0], duckdb.InterruptException) and timeout_s:
            raise QueryTimeoutError(f"query stopped after {timeout_s:g} s (--timeout)") from failure[0]
        raise failure[0]
    return result[0]


def _stop(con: duckdb.DuckDBPyConnection, worker: threading.Thread, why: str, grace_s: float = GRACE_S) -> None:
    """Interrupt until the worker has returned: an interrupt that lands before DuckDB starts executing is
    lost, so it is repeated. QueryAbandoned (`why`) when it is still running after `grace_s`."""
    began = time.monotonic()
    while worker.is_alive():
        if time.monotonic() - began >= grace_s:
            raise QueryAbandoned(f"{why} (it did not stop when interrupted: abandoned)")
        con.interrupt()
        worker.join(min(_POLL_S, grace_s / 5))
