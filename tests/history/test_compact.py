"""`recorder compact`: closed runs get a Parquet cache the history reads, and that verify can check."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from recorder.history.compact import check_compacted, compact_run, pack_root, parquet_path
from recorder.history.views import VIEWS, open_history
from recorder.store.log import LogWriter
from recorder.store.run import RunDir
from tests.helpers import run_in_process


def test_compact_closed_runs_and_the_views_do_not_change(fresh_root: Path) -> None:
    before = snapshot_all(fresh_root)
    done = run_in_process("compact", "--root", str(fresh_root), "--no-scores")
    assert done.returncode == 1  # the damaged run could not be compacted
    assert "damaged" in done.stderr and "recorder verify" in done.stderr
    assert "worked: compacted, 61 events" in done.stdout
    assert "live: live, 52 events (segment evaluator-0001.arrows is still open)" in done.stdout
    assert "rcp-gbs256-seed1: compacted" in done.stdout
    assert parquet_path(RunDir(fresh_root / "worked")).is_file()
    assert not parquet_path(RunDir(fresh_root / "live")).exists()
    with open_history(fresh_root) as history:
        sources = {r.run_id: r.source for r in history.runs}
    assert sources == {"worked": "pack", "rcp-gbs256-seed1": "pack", "live": "segments"}
    assert "packs: 2 runs newly packed, 1 pack files" in done.stdout
    assert snapshot_all(fresh_root) == before
    again = run_in_process("compact", "--root", str(fresh_root), "--no-scores")
    assert "worked: fresh, 61 events" in again.stdout
    assert "packs: 0 runs newly packed, 1 pack files" in again.stdout


def snapshot_all(root: Path) -> dict[str, list[dict]]:
    with open_history(root) as history:
        out = {}
        for view in VIEWS:
            table = history.query(f"SELECT * FROM {view} ORDER BY ALL")
            if view == "runs":
                table = table.drop(["source"])
            out[view] = table.to_pylist()
        return out


def test_a_new_segment_makes_the_cache_stale(fresh_root: Path) -> None:
    run = RunDir(fresh_root / "worked")
    assert compact_run(run).status == "compacted"
    assert check_compacted(run) == []
    with LogWriter(run, "evaluator") as w:  # a second evaluator session after compaction
        w.append("eval_failed", step=20, samples_count=5120, data={"reason": "crash", "error": "RuntimeError"})
    with open_history(fresh_root) as history:
        (source,) = [r for r in history.runs if r.run_id == "worked"]
        assert (source.source, source.events) == ("segments", 63)
        failed = history.query("SELECT step, status FROM evals WHERE run_id = 'worked' AND status = 'failed'")
        assert failed.to_pylist() == [{"step": 20, "status": "failed"}]
    problems = check_compacted(run)
    assert len(problems) == 2 and "stale" in problems[0] and "63" in problems[1]
    assert compact_run(run).status == "compacted"
    assert check_compacted(run) == []


def test_check_compacted_finds_an_altered_cache(fresh_root: Path) -> None:
    run = RunDir(fresh_root / "worked")
    compact_run(run)
    table = pq.read_table(parquet_path(run))
    values = table.column("time_ns").to_pylist()
    values[7] += 1
    altered = table.set_column(table.schema.get_field_index("time_ns"), "time_ns", pa.array(values, pa.int64()))
    pq.write_table(altered, parquet_path(run))
    (problem,) = check_compacted(run)
    assert "column 'time_ns'" in problem and "evaluator-0001.arrows seq 7" in problem
    parquet_path(run).write_bytes(b"not parquet")
    (problem,) = check_compacted(run)
    assert "unreadable Parquet" in problem


def test_no_cache_no_problem(fresh_root: Path) -> None:
    assert check_compacted(RunDir(fresh_root / "live")) == []


def test_packs_serve_fresh_runs_and_skip_stale_ones(fresh_root: Path) -> None:
    for run_id in ("worked", "rcp-gbs256-seed1"):
        compact_run(RunDir(fresh_root / run_id))
    assert pack_root(fresh_root) == (2, 1)
    before = snapshot_all(fresh_root)
    with LogWriter(RunDir(fresh_root / "worked"), "evaluator") as w:
        w.append("eval_failed", step=20, samples_count=5120, data={"reason": "crash", "error": "RuntimeError"})
    with open_history(fresh_root) as history:
        assert {r.run_id: r.source for r in history.runs} == {
            "worked": "segments",
            "rcp-gbs256-seed1": "pack",
            "live": "segments",
        }
        counts = history.query("SELECT run_id, count(*) AS n FROM events GROUP BY run_id ORDER BY run_id").to_pylist()
    # the worked run's old rows in the pack are not read twice: 61 + the new segment's 2;
    # the imported log: 116 events plus one mllog_config per configuration key it states (43)
    assert counts == [
        {"run_id": "live", "n": 52},
        {"run_id": "rcp-gbs256-seed1", "n": 116 + 43},
        {"run_id": "worked", "n": 63},
    ]
    compact_run(RunDir(fresh_root / "worked"))
    assert pack_root(fresh_root) == (2, 1)  # a stale entry: everything is repacked into one file
    with open_history(fresh_root) as history:
        assert {r.run_id: r.source for r in history.runs}["worked"] == "pack"
    after = snapshot_all(fresh_root)
    assert after["scores"] == before["scores"] and after["checkpoints"] == before["checkpoints"]
    assert len(after["evals"]) == len(before["evals"]) + 1


def test_compact_writes_replays_scores(fresh_root: Path) -> None:
    (fresh_root / "worked" / "derived" / "scores.jsonl").unlink()
    done = run_in_process("compact", "--root", str(fresh_root))
    assert "worked: compacted" in done.stdout
    with open_history(fresh_root) as history:
        got = history.query(
            "SELECT interpretation, passing_step, minutes FROM scores WHERE run_id = 'worked' "
            "AND interpretation IN ('official', 'earliest-passing') ORDER BY 1"
        ).to_pylist()
    # docs/design.md section 5, computed by replay while compacting
    assert [(r["interpretation"], r["passing_step"], round(r["minutes"], 3)) for r in got] == [
        ("earliest-passing", 18, 18.0),
        ("official", 19, 19.033),
    ]


def test_verify_checks_the_compacted_cache(fresh_root: Path) -> None:
    """`recorder verify` compares a fresh cache with the segments; a stale one is only a warning."""
    from recorder.history.cache import verify_with_cache as verify_run

    run = RunDir(fresh_root / "worked")
    compact_run(run)
    assert verify_run(run).ok and not [w for w in verify_run(run).warnings if "events.parquet" in w]
    table = pq.read_table(parquet_path(run))
    values = table.column("step").to_pylist()
    values[3] = 999
    pq.write_table(
        table.set_column(table.schema.get_field_index("step"), "step", pa.array(values, pa.int64())), parquet_path(run)
    )
    report = verify_run(run)
    assert [p.segment for p in report.problems] == ["derived/events.parquet"]
    assert "column 'step' differs" in report.problems[0].message
    with LogWriter(run, "evaluator") as w:
        w.append("eval_failed", step=20, samples_count=5120, data={"reason": "crash", "error": "RuntimeError"})
    report = verify_run(run)
    assert report.ok and any("stale" in w for w in report.warnings)


def test_runs_says_which_runs_are_not_scored_yet(tmp_path: Path) -> None:
    """Scores are files replay writes: a fresh run has none, and `recorder runs` says how to get them."""
    from tests.kit.synthetic import record_worked_example

    record_worked_example(tmp_path, "fresh")
    out = run_in_process("runs", "--root", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "1 run(s) not scored yet (fresh): `recorder replay RUN_DIR` or `recorder compact" in out.stdout
    assert run_in_process("compact", "--root", str(tmp_path)).returncode == 0
    out = run_in_process("runs", "--root", str(tmp_path))
    assert out.returncode == 0 and "not scored yet" not in out.stdout
