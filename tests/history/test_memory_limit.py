"""`--memory-limit` is the command's own memory: the resident set the query is watched against, with DuckDB
given what the command does not already hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder.history.limits import (
    MIN_QUERY_ROOM,
    MemoryLimitSpelling,
    MemoryLimitTooLow,
    limit_bytes,
    memory_budget,
    resident_bytes,
)
from tests.cli.shell import make_root, run_process

MiB = 2**20


def test_duckdb_gets_what_the_limit_leaves_above_what_the_process_holds() -> None:
    held = resident_bytes()
    if held is None:
        pytest.skip("no /proc/self/statm: memory is not watched here")
    budget = memory_budget("4GiB")
    assert budget.cap == 4 * 2**30
    duckdb_bytes = int(budget.duckdb_limit.removesuffix("MiB")) * MiB
    # the process's resident set moves a little between the two readings; what it held is not DuckDB's
    assert abs(duckdb_bytes - (4 * 2**30 - held)) < 64 * MiB


def test_a_limit_that_leaves_duckdb_no_room_is_refused_before_the_connection_opens() -> None:
    held = resident_bytes()
    if held is None:
        pytest.skip("no /proc/self/statm: memory is not watched here")
    with pytest.raises(MemoryLimitTooLow, match="--memory-limit 1MB: the command already holds"):
        memory_budget("1MB")
    assert memory_budget(f"{(held + 2 * MIN_QUERY_ROOM) // MiB}MiB").cap is not None


def test_query_names_a_limit_below_what_it_holds_in_one_error_line(tmp_path: Path) -> None:
    root = make_root(tmp_path / "runs")
    r = run_process("query", "--root", str(root), "--memory-limit", "1MB", "SELECT 1")
    errors = [line for line in r.err.splitlines() if line.startswith("error:")]
    assert r.code == 2 and len(errors) == 1 and "Traceback" not in r.err, r.err
    assert "--memory-limit 1MB: the command already holds" in errors[0] and "give at least" in errors[0]


@pytest.mark.parametrize(
    ("spelling", "size"),
    [("256M", 256 * 10**6), ("256 megabytes", 256 * 10**6), ("256mb", 256 * 10**6), ("1.5G", 1_500_000_000),
     (".5 gigabyte", 500_000_000), ("300 KiB", 300 * 2**10), ("2 GiB", 2 * 2**30), ("1T", 10**12), ("5 bytes", 5)],
)  # fmt: skip
def test_a_memory_limit_is_read_with_duckdbs_units(spelling: str, size: int) -> None:
    import duckdb

    assert limit_bytes(spelling) == size
    if size >= 2**20:  # DuckDB refuses a limit too small for its own buffers, whatever its spelling
        con = duckdb.connect()
        con.execute(f"SET memory_limit = '{spelling}'")
        # DuckDB reads the same number of bytes (shown rounded to a tenth of its unit)
        shown = con.execute(f"SELECT current_setting('memory_limit'), format_bytes({size})").fetchone()
        assert shown is not None and shown[0] == shown[1], shown


@pytest.mark.parametrize("spelling", ["-1", "none", "NONE", "80%", "1e3MB", "256", "256 mebibytes", "1_000MB"])
def test_a_memory_limit_that_is_not_a_size_is_refused_naming_the_units(spelling: str) -> None:
    assert limit_bytes(spelling) is None
    with pytest.raises(MemoryLimitSpelling, match="give a number and a unit: KB, MB, GB, TB"):
        memory_budget(spelling)
