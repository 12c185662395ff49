"""A forged `derived/events.parquet` (an accuracy raised to 0.99, its manifest untouched so the sizes still
match) is never served by the history: `recorder query` compares a run's cache with the segments before it
reads it, says the cache differs, and answers from the segments; rows it reads unchecked past the budget come
with a note naming their runs. A root's pack, written by the user's own `recorder compact`, is read unchecked
and without a note: one after every honest compact would be a false alarm (docs/integrity.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from recorder.history import cache
from recorder.store.run import RunDir
from tests.helpers import run_cli
from tests.kit.synthetic import record_run

QUERY = "SELECT step, value FROM evals WHERE key = 'accuracy' ORDER BY step"


def _compacted(root: Path) -> Path:
    run = record_run(root, "honest", gbs=256, steps=20, evals=[(18, 0.6), (19, 0.62)]).path
    done = run_cli("compact", "--root", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (run / "derived" / "events.parquet").is_file()
    return run


def _forge(run: Path) -> None:
    """Every eval_result's value raised to 0.99 in the cache, nothing else touched."""
    path = run / "derived" / "events.parquet"
    table = pq.read_table(path)
    results = pc.equal(table.column("kind"), "eval_result")
    column = table.schema.get_field_index("value")
    forged = pc.if_else(results, pa.scalar(json.dumps(0.99), table.schema.field("value").type), table.column("value"))
    pq.write_table(table.set_column(column, "value", forged), path, compression="zstd")


def _values(done_stdout: str) -> list[float]:
    return [json.loads(line)["value"] for line in done_stdout.splitlines() if line.strip()]


def test_query_does_not_serve_a_forged_cache(tmp_path: Path) -> None:
    run = _compacted(tmp_path)
    honest = run_cli("query", QUERY, "--root", str(tmp_path), "--format", "json")
    assert honest.returncode == 0 and _values(honest.stdout) == [0.6, 0.62], honest.stdout + honest.stderr
    assert honest.stderr == "", honest.stderr  # served from the root's pack after an honest compact: no alarm
    _forge(run)
    shutil.rmtree(tmp_path / ".history")  # no pack: the run's own cache would be read
    done = run_cli("query", QUERY, "--root", str(tmp_path), "--format", "json")
    assert "Traceback" not in done.stderr, done.stderr
    assert _values(done.stdout) == [0.6, 0.62], done.stdout
    said = " ".join(done.stderr.split())
    assert "events.parquet" in said and "read from its segments instead" in said, said


def test_past_the_budget_a_cache_is_read_and_named_unchecked(tmp_path: Path) -> None:
    """Within the budget the forged cache is refused; past it (a history of millions of events) it is read,
    and the note names the run: nothing from an unchecked cache is shown without one."""
    run = RunDir(_compacted(tmp_path))
    _forge(run.path)
    events = len(pq.read_table(run.derived / "events.parquet"))
    within = cache.CacheChecks()
    assert "column 'value' differs from segment" in (within.problem(run, "honest", events) or "")
    assert within.note() is None and within.left == cache.CHECK_EVENTS - events
    past = cache.CacheChecks(left=events - 1)
    assert past.problem(run, "honest", events) is None
    note = past.note()
    assert note is not None and note.startswith("1 runs (honest) are read from compacted caches not compared"), note
