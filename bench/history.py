"""History at scale: five queries through the `recorder query` views vs the same on a native DuckDB table.

    python bench/history.py                      # 10,000 runs, 100 million events (~10 GB temp disk)
    python bench/history.py --runs 200 --events 2000000 --dir /tmp/h --keep

A synthetic history is generated straight into compacted form (`<run>/derived/events.parquet` with its
manifest, and `derived/scores.jsonl`) by DuckDB, not by appending events one by one: 100 million appends
would take hours and measure the log writer, not the history. Each run: run_opened, run_start, S steps of
(weight_update, step_metrics), checkpoints of the last 3 steps (the validation start and after, as the
6.1 rule asks), block_stop, train_stop, and an evaluator session evaluating the 3 checkpoints in the order
V+1, V, V+2 (V = validation start). The native peer is the same events loaded into a DuckDB table in a
database file, with the same view definitions on top: the ratio isolates the cost of reading compacted
Parquet files (one per run) instead of a table DuckDB owns.

Printed: the time to open the history (discover runs, check each cache is fresh, build the views), then
per query the warm median of `--repeat` runs both ways and the ratio. No absolute times are asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from recorder.history.compact import MANIFEST_NAME, MANIFEST_VERSION, PARQUET_NAME, pack_root
from recorder.history.views import SCORE_COLUMNS, create_views, open_history

S_NS = 1_000_000_000
BASE_NS = 1_780_000_000 * S_NS
EXTRA = 18  # events per run besides the 2 per step: see the module docstring

QUERIES = {
    "per-run score": "SELECT run_id, status, passing_step, minutes FROM runs ORDER BY minutes, run_id",
    "time to first passing checkpoint": """
        WITH p AS (SELECT run_id, arg_min(step, eval_order) AS step FROM evals WHERE passed GROUP BY run_id),
        s AS (SELECT run_id, time_ns FROM events WHERE kind = 'run_start')
        SELECT p.run_id, p.step, (c.weight_update_ns - s.time_ns) / 60e9 AS minutes
        FROM p JOIN checkpoints c USING (run_id, step) JOIN s USING (run_id) ORDER BY minutes, run_id""",
    "checkpoint save overhead by run": """
        SELECT run_id, count(*) AS checkpoints, sum(blocked_s) AS blocked_s, sum(background_s) AS background_s
        FROM checkpoints GROUP BY run_id ORDER BY blocked_s DESC, run_id""",
    "reward curve of one run": "SELECT step, reward FROM steps WHERE run_id = '{run}' ORDER BY step",
    "events of one kind over all runs": """
        SELECT run_id, count(*) AS updates, (max(time_ns) - min(time_ns)) / 60e9 AS minutes
        FROM events WHERE kind = 'weight_update' GROUP BY run_id ORDER BY run_id""",
}


def events_sql(run: str, steps: int) -> str:
    """Every event of the runs in `range` r, as DuckDB rows of the event schema (plus `segment`)."""
    k = f"least(greatest(s - ({steps} - 2), 0), 3)"  # checkpoints committed before step s
    t0 = f"({BASE_NS}::BIGINT + r * 10000000000000)"
    wu = f"({t0} + s * 60000000000 + {k} * 2000000000)"
    rid = "printf('run-%05d', r)"
    trainer = "'trainer' AS writer, 'trainer-0000.arrows' AS segment"
    reward = f"0.2 + 0.5 * s / {steps} + (hash(r, s) % 1000) / 1e4"
    acc = "0.66 + (hash(r, s) % 8) / 100"
    last = 2 + 2 * steps + 3
    cols = "run_id, writer, segment, seq, time_ns, kind, step, key, value, data"
    return f"""
    SELECT {cols} FROM (
      SELECT {rid} AS run_id, {trainer}, 0 AS seq, {t0} - 10 AS time_ns, 'run_opened' AS kind, NULL::BIGINT AS step,
        NULL AS key, NULL AS value,
        '{{"benchmark":"qwen35_397b_grpo","config":{{}},"division":"closed","global_batch_size":256,"provenance":{{}},"resumed_from":null,"ruleset":"6.1.0"}}' AS data
      FROM {run}
      UNION ALL SELECT {rid}, {trainer}, 1, {t0}, 'run_start', NULL, NULL, NULL, '{{}}' FROM {run}
      UNION ALL SELECT {rid}, {trainer}, 2 + 2 * (s - 1) + {k}, {wu}, 'weight_update', s, NULL, NULL, '{{}}'
        FROM {run}, range(1, {steps} + 1) t(s)
      UNION ALL SELECT {rid}, {trainer}, 3 + 2 * (s - 1) + {k} + (s >= {steps} - 2)::INT, {wu} + 2000000000,
        'step_metrics', s, NULL, NULL,
        printf('{{"checkpoint_block_s":%.1f,"grad_norm":0.1,"loss":%.5f,"reward":%.5f,"step_s":60.0}}',
               CASE WHEN s >= {steps} - 2 THEN 2.0 ELSE 0.0 END, 1 - ({reward}), {reward})
        FROM {run}, range(1, {steps} + 1) t(s)
      UNION ALL SELECT {rid}, {trainer}, 3 + 2 * (s - 1) + {k}, {wu} + 30000000000, 'checkpoint_committed', s,
        NULL, NULL,
        printf('{{"blocked_ns":2000000000,"bytes":1048576,"dtype":"bfloat16","fingerprint":{{}},"format":"safetensors","path":"checkpoints/step_%07d","save_begin_ns":%d,"save_end_ns":%d,"sha256":"%s","weight_update_ns":%d}}',
               s, {wu}, {wu} + 30000000000, sha256({rid} || s), {wu})
        FROM {run}, range({steps} - 2, {steps} + 1) t(s)
      UNION ALL SELECT {rid}, {trainer}, {last} + i, {t0} + ({steps} + 1) * 60000000000 + i,
        ['block_stop', 'train_stop', 'segment_closed'][i + 1], CASE WHEN i < 2 THEN {steps} END, NULL, NULL,
        CASE i WHEN 1 THEN '{{"reason":"","status":"completed"}}' WHEN 2 THEN '{{"events":{last + 2}}}' ELSE '{{}}' END
        FROM {run}, range(3) t(i)
      UNION ALL SELECT {rid}, 'evaluator', 'evaluator-0001.arrows', 3 * o + j,
        {t0} + ({steps} + 5) * 60000000000 + o * 60000000000 + CASE WHEN j = 0 THEN 0 ELSE 60000000000 - 2 + j END,
        ['eval_start', 'eval_result', 'eval_stop'][j + 1], s, CASE WHEN j = 1 THEN 'accuracy' END,
        CASE WHEN j = 1 THEN printf('%.2f', {acc}) END,
        CASE j WHEN 0 THEN printf('{{"checkpoint":"checkpoints/step_%07d","sha256":"","worker":"w0"}}', s)
               WHEN 1 THEN '{{"k":4,"metric":"pass@4","n":251,"results":"","target":0.69}}' ELSE '{{}}' END
        FROM {run}, (SELECT o, {steps} - 2 + [1, 0, 2][o + 1] AS s FROM range(3) t(o)), range(3) u(j)
      UNION ALL SELECT {rid}, 'evaluator', 'evaluator-0001.arrows', 9, {t0} + ({steps} + 9) * 60000000000,
        'segment_closed', NULL, NULL, NULL, '{{"events":9}}' FROM {run}
    )"""


def generate(root: Path, runs: int, events: int, batch: int) -> int:
    """Write the synthetic history under `root`; returns the events written."""
    steps = (events // runs - EXTRA) // 2
    assert steps >= 4, "give at least 26 events per run"
    con = duckdb.connect(config={"threads": 2, "memory_limit": "3GB", "preserve_insertion_order": False})
    staging = root.parent / (root.name + ".staging")
    per_run = 2 * steps + EXTRA
    for start in range(0, runs, batch):
        shutil.rmtree(staging, ignore_errors=True)
        run = f"range({start}, {min(start + batch, runs)}) q(r)"
        select = f"""
            SELECT run_id, writer, seq, time_ns, time_ns - {BASE_NS} AS mono_ns, kind, step,
              CASE WHEN step IS NOT NULL THEN step * 256 END AS samples_count, key, value, data,
              sha256(run_id || writer || seq) AS digest, segment
            FROM ({events_sql(run, steps)})"""
        con.execute(
            f"COPY ({select}) TO '{staging}' (FORMAT parquet, PARTITION_BY (run_id), "
            "WRITE_PARTITION_COLUMNS true, COMPRESSION zstd)"
        )
        for part in staging.iterdir():
            run_dir = root / part.name.split("=", 1)[1]
            (run_dir / "events").mkdir(parents=True, exist_ok=True)
            (run_dir / "derived").mkdir(exist_ok=True)
            (file,) = part.iterdir()
            file.rename(run_dir / "derived" / PARQUET_NAME)
            manifest = {"version": MANIFEST_VERSION, "events": per_run, "segments": {}}
            (run_dir / "derived" / MANIFEST_NAME).write_text(json.dumps(manifest))
        print(f"  generated {min(start + batch, runs):>6} / {runs} runs", file=sys.stderr, flush=True)
    shutil.rmtree(staging, ignore_errors=True)
    write_scores(con, root, steps)
    con.close()
    return runs * per_run


def write_scores(con: duckdb.DuckDBPyConnection, root: Path, steps: int) -> None:
    """scores.jsonl per run, as replay would write it: the official reading only (first passing in order)."""
    rows = con.execute(f"""
        SELECT printf('run-%05d', r) AS run_id, list(s ORDER BY o) AS order_, list(0.66 + (hash(r, s) % 8) / 100 ORDER BY o) AS acc
        FROM range((SELECT count(*) FROM glob('{root}/*/derived/{PARQUET_NAME}'))) q(r),
             (SELECT o, {steps} - 2 + [1, 0, 2][o + 1] AS s FROM range(3) t(o))
        GROUP BY r""").fetchall()
    for run_id, order, accs in rows:
        r = int(run_id.split("-")[1])
        t0 = BASE_NS + r * 10_000_000_000_000
        passing = next((s for s, a in zip(order, accs, strict=False) if a > 0.69), None)
        k = lambda s: min(max(s - (steps - 2), 0), 3)
        stop = t0 + (passing or steps) * 60 * S_NS + k(passing or steps) * 2 * S_NS
        row = dict.fromkeys(SCORE_COLUMNS.names) | {
            "run_id": run_id,
            "ruleset": "6.1.0",
            "interpretation": "official",
            "status": "success" if passing else "aborted",
            "passing_step": passing,
            "run_start_ns": t0,
            "run_stop_ns": stop,
            "minutes": (stop - t0) / 60e9,
            "mlperf_logging_version": "4.1.68",
        }
        (root / run_id / "derived" / "scores.jsonl").write_text(json.dumps(row) + "\n")


def timed(fn: object, repeat: int) -> tuple[float, object]:
    fn()  # type: ignore[operator]  # warm-up: file cache, Parquet footers
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def native_peer(history_con: duckdb.DuckDBPyConnection, db: Path, root: Path) -> duckdb.DuckDBPyConnection:
    """The same events in a DuckDB table (a database file), with the same views on top."""
    fresh = not db.exists()
    con = duckdb.connect(str(db), config={"threads": 2, "memory_limit": "4GB"})
    if fresh:
        t = time.perf_counter()
        con.execute(f"CREATE TABLE events_table AS SELECT * FROM read_parquet('{root}/.history/*/*/*.parquet')")
        print(f"  native table loaded in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    for name in ("_scores", "_run_sources"):
        con.register(name, history_con.sql(f"SELECT * FROM {name}").to_arrow_table())
    con.execute("DROP VIEW IF EXISTS events")
    create_views(con, "SELECT * FROM events_table")
    return con


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=100_000_000, help="events in all (split evenly over runs)")
    parser.add_argument("--dir", type=Path, default=None, help="where to build (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated history (reuse it with --dir)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--batch", type=int, default=250, help="runs per generation batch")
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="recorder-history-bench-"))
    root = base / "root"
    try:
        if not root.exists():
            t = time.perf_counter()
            root.mkdir(parents=True)
            n = generate(root, args.runs, args.events, args.batch)
            size = sum(f.stat().st_size for f in root.glob(f"*/derived/{PARQUET_NAME}"))
            print(
                f"generated {args.runs} runs, {n:,} events, {size / 2**30:.2f} GiB of Parquet in "
                f"{time.perf_counter() - t:.0f} s"
            )
        t = time.perf_counter()
        packed, packs = pack_root(root, threads=2)
        print(
            f"pack_root (what `recorder compact` does last): {packed} runs packed, {packs} pack(s), "
            f"{time.perf_counter() - t:.0f} s"
        )
        t = time.perf_counter()
        history = open_history(root, threads=2)
        opened = time.perf_counter() - t
        n_events = sum(r.events for r in history.runs)
        print(
            f"open_history: {len(history.runs)} runs, {n_events:,} events, {opened:.2f} s "
            "(discover runs, check caches, build views)"
        )
        native = native_peer(history.con, base / "native.duckdb", root)
        assert {r.source for r in history.runs} == {"pack"}
        run = history.runs[len(history.runs) // 2].run_id
        print(f"{'query':36} {'views (s)':>10} {'native (s)':>11} {'ratio':>6}  rows")
        for name, sql in QUERIES.items():
            sql = sql.format(run=run)
            t_view, got = timed(lambda sql=sql: history.query(sql), args.repeat)
            t_native, want = timed(lambda sql=sql: native.sql(sql).to_arrow_table(), args.repeat)
            assert got.to_pylist() == want.to_pylist(), f"{name}: views and native table disagree"  # type: ignore[attr-defined]
            print(
                f"{name:36} {t_view:10.3f} {t_native:11.3f} {t_view / t_native:6.2f}  {got.num_rows}",  # type: ignore[attr-defined]
                flush=True,
            )
        history.close()
        native.close()
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"python {sys.version.split()[0]}, duckdb {duckdb.__version__}, {os.cpu_count()} CPUs, threads=2")


if __name__ == "__main__":
    main()
