"""`recorder query` and `recorder runs` as a user runs them: formats, read-only, bad input."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from recorder.history.errors import QueryError, QueryRefusedError
from recorder.history.views import open_history
from tests.helpers import run_in_process


def test_query_json_and_csv(history_root: Path, tmp_path: Path) -> None:
    sql = "SELECT run_id, passing_step, minutes FROM runs WHERE minutes IS NOT NULL ORDER BY run_id"
    done = run_in_process("query", sql, "--root", str(history_root), "--format", "json")
    assert done.returncode == 0, done.stderr
    got = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["run_id"], r["passing_step"]) for r in got] == [("rcp-gbs256-seed1", 18), ("worked", 19)]
    assert "damaged" in done.stderr  # the damaged run is named, the others still answer
    out = tmp_path / "runs.csv"
    done = run_in_process("query", sql, "--root", str(history_root), "--format", "csv", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert [r["run_id"] for r in csv.DictReader(io.StringIO(out.read_text()))] == ["rcp-gbs256-seed1", "worked"]


def test_runs_command_table(history_root: Path) -> None:
    done = run_in_process("runs", "--root", str(history_root))
    assert done.returncode == 0, done.stderr
    assert "3 runs" in done.stdout and "19.033" in done.stdout and "worked" in done.stdout
    assert "damaged" in done.stderr and "left out" in done.stderr


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELEC * FROM runs", "malformed SQL"),
        ("SELECT * FROM nope", "the views are: events, runs"),
        ("SELECT no_such_column FROM runs", "query failed"),
        ("SELECT 1; SELECT 2", "exactly one SQL statement"),
    ],
)
def test_bad_sql_is_an_input_error(history_root: Path, sql: str, message: str) -> None:
    done = run_in_process("query", sql, "--root", str(history_root))
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE t AS SELECT 1",
        "INSERT INTO scores SELECT * FROM scores",
        "DELETE FROM events",
        "COPY (SELECT 1) TO '/tmp/recorder-history-out.csv'",
        "ATTACH '/tmp/recorder-history.duckdb' AS other",
        "INSTALL httpfs",
        "SET enable_external_access = true",
        "PRAGMA enable_profiling",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/*')",
    ],
)
def test_statements_that_write_or_read_files_are_refused(history_root: Path, sql: str) -> None:
    with open_history(history_root) as history:
        with pytest.raises(QueryRefusedError, match="refused"):
            history.query(sql)
    assert not Path("/tmp/recorder-history-out.csv").exists()


def test_refusal_through_the_cli(history_root: Path) -> None:
    done = run_in_process("query", "DROP VIEW runs", "--root", str(history_root))
    assert done.returncode == 2 and "read-only" in done.stderr


def test_missing_root(tmp_path: Path) -> None:
    done = run_in_process("query", "SELECT 1", "--root", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "no such root" in done.stderr


def test_empty_root_answers_with_no_rows(tmp_path: Path) -> None:
    with open_history(tmp_path) as history:
        assert history.query("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 0}]
        assert history.query("SELECT * FROM runs").num_rows == 0
        with pytest.raises(QueryError):
            history.query("SELECT * FROM evalz")


def test_bad_scores_files_are_named_and_the_events_still_answer(fresh_root: Path) -> None:
    (fresh_root / "worked" / "derived" / "scores.jsonl").write_text('{"interpretation": "official", "minutes": "x"}\n')
    (fresh_root / "rcp-gbs256-seed1" / "derived" / "scores.jsonl").write_text("{not json\n")
    with open_history(fresh_root) as history:
        assert history.query("SELECT count(*) AS n FROM scores").to_pylist() == [{"n": 0}]
        assert history.query("SELECT count(*) AS n FROM runs").to_pylist() == [{"n": 3}]
        problems = "\n".join(history.problems)
    assert "worked/derived/scores.jsonl: scores left out, a value has the wrong type" in problems
    assert "rcp-gbs256-seed1/derived/scores.jsonl line 1: not JSON" in problems
