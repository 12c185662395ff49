"""`--format json` on bad input: the error as a JSON object on stdout (`error`, `exit_code`), the one `error:`
line on stderr as ever; and the documents' values are JSON's own types (booleans, times with their date)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tests.cli.shell import make_root, run_main

BAD = {
    "verify": ["verify", "{base}/nope", "--format", "json"],
    "evals": ["evals", "{base}/nope", "--format", "json"],
    "replay": ["replay", "{base}/nope", "--format", "json"],
    "score": ["score", "{base}/nope", "--format", "json"],
    "runs": ["runs", "--root", "{base}/nope", "--format", "json"],
    "query": ["query", "--root", "{base}/nope", "SELECT 1", "--format", "json"],
    "events": ["events", "{base}/nope", "--format=json"],
    "unknown option": ["verify", "{base}/nope", "--format", "json", "--bogus"],
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_under_format_json_is_a_json_error_object(tmp_path: Path, name: str) -> None:
    done = run_main(*[a.format(base=tmp_path) for a in BAD[name]])
    assert done.code == 2
    [said] = done.err.splitlines()
    assert said.startswith("error: ")
    assert json.loads(done.out) == {"error": said.removeprefix("error: "), "exit_code": 2}


def test_a_table_command_prints_nothing_on_stdout_for_bad_input(tmp_path: Path) -> None:
    done = run_main("verify", str(tmp_path / "nope"))
    assert done.code == 2 and done.out == ""


def test_evals_json_says_pass_as_a_boolean_and_when_with_the_date(tmp_path: Path) -> None:
    root = make_root(tmp_path / "runs")
    doc = json.loads(run_main("evals", str(root / "worked"), "--format", "json").out)
    rows = doc["evaluations"]
    assert [(r["step"], r["pass"], r["verdict"]) for r in rows] == [
        (19, True, "yes"),
        (18, True, "yes"),
        (20, True, "yes"),
    ]
    for row in rows:
        started = dt.datetime.fromisoformat(row["started"])
        assert started.tzinfo is not None and started.year >= 2000
