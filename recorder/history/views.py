"""History: read-only DuckDB views over every run under a root.

Views: `events` (every event of every run, plus its `segment`), `runs` (one row per run), `steps`,
`checkpoints`, `evals` and `scores`. Closed, compacted runs are read natively from
`derived/events.parquet`; every other run from its segments through pyarrow, combined into one
Arrow table first (DuckDB scans one-row record batches about 50x slower). Scores are the files replay
writes (`derived/scores.jsonl`): the core never imports `replay`.

A query runs in the SQL sandbox (recorder.history.sandbox): read-only, enforced twice.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from recorder.errors import RecorderError
from recorder.history.cache import CacheChecks
from recorder.history.compact import Pack, fresh_manifest, manifest_run_id, parquet_path, read_packs
from recorder.history.errors import HistoryError, QueryError, QueryRefusedError
from recorder.history.limits import (
    QueryAbandoned,
    SpillFolder,
    connection_config,
    memory_budget,
    run_limited,
)
from recorder.history.sandbox import first_line, lock_down, read_only_statement, sql_list
from recorder.rules import BENCHMARK, is_standard_target_sql, passes_sql
from recorder.store.catalogue import catalogue, writers_of
from recorder.store.events import arrow_schema
from recorder.store.reader import read_run, recorded_run_id
from recorder.store.run import RunDir, list_runs
from recorder.store.signed_segments import adopted_segments
from recorder.verify import check_segment

if TYPE_CHECKING:
    import duckdb

VIEWS = ("events", "runs", "steps", "checkpoints", "evals", "scores")
SCORES_NAME = "scores.jsonl"
SCORE_COLUMNS = pa.schema(
    [
        ("run_id", pa.string()),
        ("ruleset", pa.string()),
        ("interpretation", pa.string()),
        ("status", pa.string()),
        ("passing_step", pa.int64()),
        ("run_start_ns", pa.int64()),
        ("run_stop_ns", pa.int64()),
        ("minutes", pa.float64()),
        ("checker", pa.string()),
        ("mlperf_logging_version", pa.string()),
        ("why", pa.string()),
        ("target", pa.float64()),
        ("comparable", pa.bool_()),
        ("verified", pa.bool_()),  # false: derived with --force from a run that fails verify
    ]
)


@dataclass(frozen=True)
class RunSource:
    """Where the history read one run from."""

    run_id: str
    path: Path
    source: Literal["pack", "parquet", "segments"]  # a root's pack file, the run's compacted file, its segments
    events: int
    segments: int
    open_segments: int
    torn_bytes: int


@dataclass
class History:
    """A DuckDB connection with the history views of one root. `problems` names the runs left out."""

    root: Path
    con: duckdb.DuckDBPyConnection
    runs: list[RunSource] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    spill: SpillFolder | None = None
    memory_cap: int | None = None  # resident bytes past which a query is stopped (None: not watched)
    abandoned: bool = False  # a query did not stop when interrupted: the connection is never waited for

    def query(self, sql: str, *, timeout_s: float | None = None) -> pa.Table:
        """Run one read-only statement; the result as an Arrow table. Interrupted after `timeout_s`, or on
        Ctrl-C (QueryTimeoutError, QueryInterrupted)."""
        import duckdb

        statement = read_only_statement(self.con, sql)
        try:
            return run_limited(self.con, lambda: self.con.sql(statement).to_arrow_table(), timeout_s, self.memory_cap)
        except QueryAbandoned:
            self.abandoned = True
            raise
        except duckdb.CatalogException as e:
            raise QueryError(f"{first_line(e)}\n  the views are: {', '.join(VIEWS)}") from e
        except duckdb.PermissionException as e:
            raise QueryRefusedError(f"refused: {first_line(e)} (queries may read only the history views)") from e
        except duckdb.Error as e:
            raise QueryError(f"query failed: {first_line(e)}") from e

    def close(self) -> None:
        import duckdb

        try:
            if not self.abandoned:  # closing would wait for the query that would not stop; the process ends it
                self.con.close()
        except duckdb.Error:  # an interrupted query can leave it busy for a moment; the process ends it anyway
            pass
        finally:
            if self.spill is not None:
                self.spill.remove()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _empty_events() -> pa.Table:
    return arrow_schema().empty_table().append_column("segment", pa.array([], pa.string()))


def read_scores(run: RunDir, run_id: str) -> list[dict[str, Any]]:
    """The rows of `derived/scores.jsonl`, each checked against the contract's columns, under the run's
    recorded id (the file is anyone's to edit; the events say whose run it is)."""
    path = run.derived / SCORES_NAME
    if not path.exists():
        return []
    rows = []
    for line_no, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as e:  # RecursionError: nested deeper than Python parses
            raise HistoryError(f"{path} line {line_no}: not JSON ({e}); rerun `recorder score {run.path}`") from e
        if not isinstance(row, dict):
            raise HistoryError(f"{path} line {line_no}: not a JSON object")
        rows.append({name: row.get(name) for name in SCORE_COLUMNS.names} | {"run_id": run_id})
    return rows


def _scores_table(src: _Sources) -> pa.Table:
    """All runs' scores in one table (one conversion: 10,000 small ones cost 1.5 s). A file with a value
    of the wrong type is found afterwards, named, and its run's scores left out."""
    try:
        return pa.Table.from_pylist([row for _, rows in src.scores for row in rows], schema=SCORE_COLUMNS)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    good = []
    for run, rows in src.scores:
        try:
            pa.Table.from_pylist(rows, schema=SCORE_COLUMNS)
            good.extend(rows)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            src.problems.append(
                f"{run.derived / SCORES_NAME}: scores left out, a value has the wrong type ({e}); "
                f"rerun `recorder score {run.path}`"
            )
    return pa.Table.from_pylist(good, schema=SCORE_COLUMNS)


@dataclass
class _Sources:
    """Where the views read each run from, gathered before DuckDB is involved."""

    runs: list[RunSource] = field(default_factory=list)
    packs: list[str] = field(default_factory=list)  # files of the packs holding fresh runs
    not_from_packs: list[str] = field(default_factory=list)  # run ids whose pack rows are stale
    parquet: list[str] = field(default_factory=list)  # per-run compacted files
    live: list[pa.Table] = field(default_factory=list)
    scores: list[tuple[RunDir, list[dict[str, Any]]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def files(self) -> list[str]:
        return self.packs + self.parquet


def _utf8_name(path: Path) -> bool:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(path: Path) -> str:
    """`path` with the bytes that are not UTF-8 shown as `\\xff` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _load(runs: list[RunDir], packs: list[Pack]) -> _Sources:
    """Each run from the cheapest fresh source: a pack, its own compacted file, or its segments."""
    out = _Sources()
    packed = {run_id: (pack, segments) for pack in packs for run_id, segments in pack.runs.items()}
    used: set[Path] = set()
    served: set[str] = set()
    folders: dict[str, Path] = {}  # run id -> the folder the history reads it from
    checks = CacheChecks()  # each cache compared with its segments before it is read, within a budget
    for run in runs:
        if not _utf8_name(run.path):  # pyarrow and DuckDB open files by UTF-8 names: one odd folder is left out
            out.problems.append(f"{_escaped(run.path)}: left out of the history: its name is not UTF-8; rename it")
            continue
        try:
            manifest = fresh_manifest(run)
            run_id = recorded_run_id(run) if manifest is None else manifest_run_id(run, manifest)
            if run_id in folders:  # a copy beside its original: the history is keyed by run id, so one of them
                raise HistoryError(f"it records run id {run_id!r}, as {folders[run_id]} does")
            entry = packed.get(run_id) if manifest is not None else None
            in_pack = manifest is not None and entry is not None and entry[1] == manifest["segments"]
            if manifest is not None and not in_pack:  # a run's own cache is compared with its segments first
                cache_problem = checks.problem(run, run_id, manifest["events"])
                if cache_problem is not None:  # and never read when it differs
                    out.problems.append(f"{run.path}: {cache_problem}: read from its segments instead")
                    manifest = None
            if manifest is not None:
                source: Literal["pack", "parquet"] = "pack" if in_pack else "parquet"
                if entry is not None and in_pack:
                    # a pack holds many runs and comes from the user's own `compact`: its rows are not compared,
                    # and not warned of on every query either (that would be an alarm after an honest compact)
                    used.add(entry[0].path)
                    served.add(run_id)
                else:
                    out.parquet.append(str(parquet_path(run).resolve()))
                out.runs.append(
                    RunSource(run_id, run.path, source, manifest["events"], len(manifest["segments"]), 0, 0)
                )
            else:
                _load_segments(run, run_id, out)
            folders[run_id] = run.path  # only a run that loaded claims its id: a damaged copy does not
        except RecorderError as e:
            out.problems.append(f"{run.path}: left out of the history: {e}")
            continue
        try:
            rows = read_scores(run, run_id)
        except HistoryError as e:  # the events still answer; only this run's scores are missing
            out.problems.append(f"scores left out: {e}")
            continue
        if rows:
            out.scores.append((run, rows))
    unchecked = checks.note()
    if unchecked is not None:
        out.problems.append(unchecked)
    out.packs = [str(f.resolve()) for p in packs if p.path in used for f in p.files()]
    out.not_from_packs = sorted(r for r, (pack, _) in packed.items() if pack.path in used and r not in served)
    return out


def _load_segments(run: RunDir, run_id: str, out: _Sources) -> None:
    log = read_run(run)
    altered = [p for seg in log.segments for p in check_segment(seg, None)]
    if altered:
        raise HistoryError(f"`recorder verify` fails: {altered[0]}")
    table = log.table()
    adopted = adopted_segments(run)  # open, but their writers are gone (recorder.store.adoption)
    out.live.append(table)
    out.runs.append(
        RunSource(
            run_id,
            run.path,
            "segments",
            table.num_rows,
            len(log.segments),
            sum(1 for s in log.segments if not s.closed and s.name not in adopted),
            sum(t.bytes_lost for t in log.torn),
        )
    )
    out.problems.extend(f"{run.path}: {t} (its complete events are included)" for t in log.torn)
    out.problems.extend(f"{run.events}/{why}" for why in log.skipped)


def _runs_table(sources: list[RunSource]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "run_id": s.run_id,
                "path": str(s.path),
                "source": s.source,
                "events": s.events,
                "segments": s.segments,
                "open_segments": s.open_segments,
            }
            for s in sources
        ],
        schema=pa.schema(
            [
                ("run_id", pa.string()),
                ("path", pa.string()),
                ("source", pa.string()),
                ("events", pa.int64()),
                ("segments", pa.int64()),
                ("open_segments", pa.int64()),
            ]
        ),
    )


def open_history(root: Path | str, *, threads: int | None = None, memory_limit: str | None = None) -> History:
    """Build the views over every run under `root`. Damaged runs are left out and named in `.problems`."""
    root = Path(root)
    if not root.is_dir():
        what = "not a folder" if os.path.lexists(root) else "no such root directory"
        raise HistoryError(f"{root}: {what} (give --root DIR, the folder holding the runs)")
    return open_runs(root, list_runs(root), threads=threads, packs=read_packs(root), memory_limit=memory_limit)


def open_runs(
    root: Path,
    runs: list[RunDir],
    *,
    threads: int | None = None,
    packs: list[Pack] | None = None,
    memory_limit: str | None = None,
) -> History:
    """The views over the given runs only (`recorder plot` draws one run through them). DuckDB spills to a
    private temporary folder (removed on close), never to the current one, within `memory_limit`."""
    import duckdb

    src = _load(runs, packs or [])
    budget = memory_budget(memory_limit)  # after the live events are in memory: they are the process's
    spill = SpillFolder()
    try:
        con = duckdb.connect(config=connection_config(spill, budget))
    except duckdb.Error as e:
        spill.remove()
        raise HistoryError(f"cannot open the history: {first_line(e)} (check --memory-limit)") from e
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    con.execute("SET parquet_metadata_cache = true")  # keeps Parquet footers between queries
    con.register("_live_events", pa.concat_tables(src.live).combine_chunks() if src.live else _empty_events())
    con.register("_scores", _scores_table(src))
    con.register("_run_sources", _runs_table(src.runs))
    create_views(con, events_source_sql(src.packs, src.not_from_packs, src.parquet))
    lock_down(con, src.files())
    return History(root, con, src.runs, src.problems, spill, budget.cap)


def events_source_sql(packs: list[str], not_from_packs: list[str], parquet: list[str]) -> str:
    """The `events` view's query: packs (minus their stale runs), per-run compacted files, live runs."""
    columns = ", ".join([*arrow_schema().names, "segment"])
    parts = [f"SELECT {columns} FROM _live_events"]
    if parquet:
        parts.append(f"SELECT {columns} FROM read_parquet({sql_list(parquet)})")
    if packs:
        stale = f" WHERE run_id NOT IN ({sql_list(not_from_packs)[1:-1]})" if not_from_packs else ""
        parts.append(f"SELECT {columns} FROM read_parquet({sql_list(packs)}){stale}")
    return " UNION ALL ".join(reversed(parts))


def writers_sql() -> str:
    """A SQL condition on (kind, writer): the event is of a kind its writer may record (the catalogue's
    `writers`, as recorder.store.catalogue.may_write reads them; verify's rule kind-writer refuses the rest)."""
    cases = []
    for kind in sorted(catalogue()):
        names = writers_of(kind)
        if "*" in names:
            cases.append(f"WHEN '{kind}' THEN true")
            continue
        plain = [n for n in names if "<R>" not in n]
        ranked = [n.replace("<R>", "[0-9]+") for n in names if "<R>" in n]
        either = [f"writer IN ({sql_list(plain)[1:-1]})"] if plain else []
        either += [f"regexp_full_match(writer, '{r}')" for r in ranked]
        cases.append(f"WHEN '{kind}' THEN ({' OR '.join(either)})")
    return f"CASE kind {' '.join(cases)} ELSE false END"


def _goals_table() -> pa.Table:
    """Each benchmark's goal (recorder.goals, from mlperf-logging's ruleset files): target and comparison."""
    from recorder.goals import all_goals

    goals = all_goals()
    return pa.table(
        {
            "benchmark": pa.array(list(goals), pa.string()),
            "target": pa.array([g.target for g in goals.values()], pa.float64()),
            "op": pa.array([g.op for g in goals.values()], pa.string()),
        }
    )


def create_views(con: duckdb.DuckDBPyConnection, events_sql: str) -> None:
    """The views over `events_sql` (the bench reuses them on a native table): only events whose writer may
    record their kind."""
    con.register("_goals", _goals_table())
    con.execute(f"CREATE OR REPLACE VIEW events AS SELECT * FROM ({events_sql}) WHERE {writers_sql()}")
    for sql in VIEW_SQL:
        con.execute(sql)


# Facts of each run from its own events; imported runs carry them as mllog lines (`value` is JSON text).
# `steps` is the final step trained (train_stop, else block_stop); only a run that has neither (still
# training, or crashed) is counted from its weight updates, so the view reads no per-step rows for the rest.
# `target` is the pass target the run recorded (recorder.rules.recorded_target: run_opened's `target`, else
# its config's eval.target); an imported log records none (its target_accuracy line is its benchmark's own).
_RUN_FACTS = """
CREATE OR REPLACE VIEW _run_facts AS
WITH f AS (
  SELECT run_id,
    coalesce(any_value(data->>'benchmark') FILTER (kind = 'run_opened'),
             any_value(value->>'$') FILTER (kind = 'mllog_line' AND key = 'submission_benchmark')) AS benchmark,
    coalesce(any_value(data->>'division') FILTER (kind = 'run_opened'),
             any_value(value->>'$') FILTER (kind = 'mllog_line' AND key = 'submission_division')) AS division,
    coalesce(any_value(TRY_CAST(data->>'global_batch_size' AS BIGINT)) FILTER (kind = 'run_opened'),
             any_value(TRY_CAST(value AS BIGINT)) FILTER (kind = 'mllog_line' AND key = 'global_batch_size'))
      AS global_batch_size,
    coalesce(max(step) FILTER (kind = 'train_stop'), max(step) FILTER (kind = 'block_stop')) AS final_step,
    any_value(data->>'status') FILTER (kind = 'train_stop') AS train_status,
    coalesce(min(time_ns) FILTER (kind = 'run_start'),
             min(TRY_CAST(data->>'time_ms' AS BIGINT) * 1000000) FILTER (kind = 'mllog_line' AND key = 'run_start'))
      AS run_start_ns,
    bool_or(writer = 'import') AS imported,
    coalesce(any_value(TRY_CAST(data->>'target' AS DOUBLE)) FILTER (kind = 'run_opened'),
             any_value(TRY_CAST(data->>'$.config.eval.target' AS DOUBLE)) FILTER (kind = 'run_opened'))
      AS target,
    coalesce(bool_or(data->>'resumed_from' IS NOT NULL) FILTER (kind = 'run_opened'), false) AS resumed
  FROM events
  WHERE kind IN ('run_opened', 'run_start', 'block_stop', 'train_stop')
     OR (kind = 'mllog_line' AND key IN ('submission_benchmark', 'submission_division', 'global_batch_size',
                                        'run_start'))
  GROUP BY run_id
),
-- apart from f: DuckDB computes f's JSON extractions for every row f reads, and a long run has a commit per step
checkpointed AS (SELECT DISTINCT run_id FROM events WHERE kind = 'checkpoint_committed'),
unfinished AS (
  SELECT run_id, max(step) AS last_step FROM events
  WHERE kind IN ('weight_update', 'step_metrics')
    AND run_id IN (SELECT run_id FROM _run_sources EXCEPT SELECT run_id FROM f WHERE final_step IS NOT NULL)
  GROUP BY run_id
)
SELECT f.* EXCLUDE (final_step), c.run_id IS NOT NULL AS checkpointed, coalesce(f.final_step, u.last_step) AS steps
FROM f LEFT JOIN unfinished u USING (run_id) LEFT JOIN checkpointed c USING (run_id)
"""

# One row per run. Status, passing step and minutes come from the score replay wrote for the `official`
# interpretation, or `as-recorded` when official derives nothing (imported logs have no weight updates).
# `comparable` is false for a run judged by a target other than the ruleset's, or resumed.
_RUNS = f"""
CREATE OR REPLACE VIEW runs AS
WITH score AS (
  SELECT * FROM _scores
  WHERE interpretation IN ('official', 'as-recorded')
  QUALIFY row_number() OVER (PARTITION BY run_id
                             ORDER BY status = 'none', interpretation <> 'official') = 1
)
SELECT r.run_id, f.benchmark, f.division, f.global_batch_size, f.steps, f.train_status,
  CASE WHEN NOT f.imported AND NOT f.checkpointed THEN 'no checkpoint' ELSE s.status END AS status,
  s.passing_step, CASE WHEN NOT f.imported AND NOT f.checkpointed THEN NULL ELSE s.minutes END AS minutes,
  s.interpretation AS scored_as, f.run_start_ns,
  -- why the run's minutes are not a valid timed MLPerf result, space-separated; NULL when there is none
  nullif(concat_ws(' ',
    CASE WHEN coalesce(f.resumed, false) THEN 'resumed' END,
    CASE WHEN s.verified = false THEN 'unverified' END,
    CASE WHEN NOT ({is_standard_target_sql("f.target")}) THEN 'other-target' END,
    CASE WHEN {is_standard_target_sql("f.target")} AND NOT coalesce(f.resumed, false) AND s.comparable = false
         THEN 'other-evaluation' END), '') AS flags,
  CASE WHEN f.imported THEN 'imported' ELSE 'recorded' END AS origin,
  r.source, r.events, r.segments, r.open_segments, r.path, f.target,
  -- the scores' comparable is recorder.comparability's (the evaluation too); the target holds before any score
  {is_standard_target_sql("f.target")} AND NOT coalesce(f.resumed, false)
    AND coalesce(s.comparable, true) AS comparable,
  -- what its evaluations are judged by: the target it recorded, else its benchmark's (recorder.goals)
  coalesce(f.target, g.target) AS pass_target, g.op AS pass_op
FROM _run_sources r LEFT JOIN _run_facts f USING (run_id) LEFT JOIN score s USING (run_id)
  LEFT JOIN _goals g ON g.benchmark = f.benchmark
"""

# One row per trained step, from one scan of the events. Imported logs carry a step's metrics in
# `tracked_stats` lines (and replay's importer turns them into step_metrics too: max() merges the two).
_STEPS = """
CREATE OR REPLACE VIEW steps AS
WITH m AS (
  SELECT run_id, step, samples_count, kind,
    CASE WHEN kind = 'mllog_line' THEN TRY_CAST(data->>'time_ms' AS BIGINT) * 1000000 ELSE time_ns END AS time_ns,
    CASE WHEN kind = 'mllog_line' THEN value ELSE data END AS j
  FROM events
  WHERE kind = 'weight_update'
     -- an importer turns every tracked_stats line into step metrics, also a validation's
     OR (kind = 'step_metrics' AND (writer <> 'import' OR json_exists(data, '$.reward')
                                    OR json_exists(data, '$.train_step_time')))
     OR (kind = 'mllog_line' AND key = 'tracked_stats' AND step IS NOT NULL
         AND (json_exists(value, '$.reward') OR json_exists(value, '$.train_step_time')))
)
SELECT run_id, step, max(samples_count) AS samples_count,
  max(time_ns) FILTER (kind = 'weight_update') AS weight_update_ns,
  max(time_ns) FILTER (kind <> 'weight_update') AS metrics_ns,
  max(TRY_CAST(coalesce(j->>'loss', j->>'reduced_train_loss') AS DOUBLE)) FILTER (kind <> 'weight_update') AS loss,
  max(TRY_CAST(j->>'reward' AS DOUBLE)) FILTER (kind <> 'weight_update') AS reward,
  max(TRY_CAST(j->>'grad_norm' AS DOUBLE)) FILTER (kind <> 'weight_update') AS grad_norm,
  max(TRY_CAST(coalesce(j->>'tokens', j->>'global_valid_toks') AS DOUBLE)) FILTER (kind <> 'weight_update') AS tokens,
  max(TRY_CAST(coalesce(j->>'step_s', j->>'train_step_time') AS DOUBLE)) FILTER (kind <> 'weight_update') AS step_s,
  max(TRY_CAST(j->>'checkpoint_block_s' AS DOUBLE)) FILTER (kind <> 'weight_update') AS checkpoint_block_s
FROM m GROUP BY run_id, step
"""

_CHECKPOINTS = """
CREATE OR REPLACE VIEW checkpoints AS
WITH c AS (  -- each commit's JSON parsed once (see steps)
  SELECT run_id, step, samples_count, time_ns,
    json_extract_string(data, ['$.weight_update_ns', '$.save_begin_ns', '$.save_end_ns', '$.blocked_ns', '$.path',
                               '$.sha256', '$.bytes']) AS x
  FROM events WHERE kind = 'checkpoint_committed'
),
t AS (
  SELECT run_id, step, samples_count, time_ns, TRY_CAST(x[1] AS BIGINT) AS weight_update_ns,
    TRY_CAST(x[2] AS BIGINT) AS save_begin_ns, TRY_CAST(x[3] AS BIGINT) AS save_end_ns,
    TRY_CAST(x[4] AS BIGINT) AS blocked_ns, x[5] AS path, x[6] AS sha256, TRY_CAST(x[7] AS BIGINT) AS bytes
  FROM c
)
SELECT run_id, step, samples_count, time_ns AS committed_ns, weight_update_ns, save_begin_ns, save_end_ns,
  blocked_ns / 1e9 AS blocked_s, (save_end_ns - save_begin_ns) / 1e9 AS save_s,
  (save_end_ns - save_begin_ns - blocked_ns) / 1e9 AS background_s, path, sha256, bytes
FROM t
"""

# One row per evaluation result or failure, with the interval around it (the same segment's nearest
# eval_start before and eval_stop after) and its place in the evaluation order. `passed` is the rule's
# comparison (recorder.rules.passes_sql) against the target the evaluator judged by: the run's recorded one.
# Imported logs: their eval_* lines (or replay's importer events) with the target from the log's
# target_accuracy line. One scan of the events.
_EVALS = f"""
CREATE OR REPLACE VIEW evals AS
WITH ev AS MATERIALIZED (
  SELECT run_id, writer, segment, seq, kind, key, value, step, samples_count, data,
    CASE WHEN kind = 'mllog_line' THEN TRY_CAST(data->>'time_ms' AS BIGINT) * 1000000 ELSE time_ns END AS time_ns
  FROM events
  WHERE kind IN ('eval_start', 'eval_result', 'eval_stop', 'eval_failed')
     OR (kind = 'mllog_line' AND key IN ('eval_start', 'eval_accuracy', 'eval_stop', 'global_batch_size',
                                         'target_accuracy', 'submission_benchmark'))
     OR kind = 'run_opened'
),
-- each run's benchmark, and its goal (recorder.goals: the ruleset files' target and direction)
g AS (
  SELECT b.run_id, _goals.target, _goals.op FROM (
    SELECT run_id, coalesce(any_value(data->>'benchmark') FILTER (kind = 'run_opened'),
                            any_value(value->>'$') FILTER (kind = 'mllog_line' AND key = 'submission_benchmark'),
                            -- a run this tool recorded without naming its benchmark trained the default one
                            CASE WHEN bool_or(kind = 'run_opened' AND writer <> 'import') THEN '{BENCHMARK}' END)
      AS benchmark
    FROM ev GROUP BY run_id
  ) b JOIN _goals ON _goals.benchmark = b.benchmark
),
imp AS (
  SELECT run_id, any_value(TRY_CAST(value AS BIGINT)) FILTER (key = 'global_batch_size') AS gbs,
    any_value(TRY_CAST(value AS DOUBLE)) FILTER (key = 'target_accuracy') AS target
  FROM ev WHERE kind = 'mllog_line' GROUP BY run_id
),
lines AS (
  SELECT e.*, coalesce(e.step, e.samples_count // imp.gbs) AS line_step, coalesce(g.target, imp.target) AS target
  FROM ev e JOIN imp USING (run_id) LEFT JOIN g USING (run_id) WHERE e.kind = 'mllog_line'
),
r AS (
  SELECT e.run_id, e.writer, e.segment, e.seq, e.step, e.samples_count, e.key, TRY_CAST(e.value AS DOUBLE) AS value,
    e.time_ns, e.data->>'metric' AS metric,
    coalesce(TRY_CAST(e.data->>'target' AS DOUBLE), g.target, imp.target) AS target, 'ok' AS status,
    -- evaluated with --force from a run that fails verify
    CASE WHEN e.data->>'unverified' IS NOT NULL THEN 'UNVERIFIED: ' || (e.data->>'unverified') END AS reason
  FROM ev e LEFT JOIN imp USING (run_id) LEFT JOIN g USING (run_id) WHERE e.kind = 'eval_result'
  UNION ALL
  SELECT run_id, writer, segment, seq, step, samples_count, NULL, NULL, time_ns, NULL, NULL,
    -- stopped by its own session (Ctrl-C, exit; evaluator.attempts.INTERRUPTIONS): not a failed evaluation
    CASE WHEN data->>'error' IN ('KeyboardInterrupt', 'SystemExit') THEN 'interrupted' ELSE 'failed' END,
    data->>'reason'
  FROM ev WHERE kind = 'eval_failed'
  UNION ALL
  SELECT run_id, writer, segment, seq, line_step, samples_count, 'accuracy', TRY_CAST(value AS DOUBLE), time_ns,
    NULL, target, 'ok', NULL
  FROM lines
  WHERE key = 'eval_accuracy' AND run_id NOT IN (SELECT run_id FROM ev WHERE kind = 'eval_result')
),
s AS (
  SELECT run_id, segment, step, time_ns, data->>'worker' AS worker FROM ev WHERE kind = 'eval_start'
  UNION ALL
  SELECT run_id, segment, line_step, time_ns, NULL FROM lines WHERE key = 'eval_start'
),
t AS (
  SELECT run_id, segment, step, time_ns FROM ev WHERE kind = 'eval_stop'
  UNION ALL
  SELECT run_id, segment, line_step, time_ns FROM lines WHERE key = 'eval_stop'
),
-- the nearest start before and stop after each result (an ASOF join is 10x slower here: thousands of
-- tiny partitions); (run_id, segment, seq) identifies a result
j AS (
  SELECT r.*, s.time_ns AS start_ns, s.worker
  FROM r LEFT JOIN s ON r.run_id = s.run_id AND r.segment = s.segment AND r.step = s.step
    AND s.time_ns <= r.time_ns
  QUALIFY row_number() OVER (PARTITION BY r.run_id, r.segment, r.seq ORDER BY s.time_ns DESC NULLS LAST) = 1
),
k AS (
  SELECT j.*, t.time_ns AS stop_ns
  FROM j LEFT JOIN t ON j.run_id = t.run_id AND j.segment = t.segment AND j.step = t.step
    AND t.time_ns >= j.time_ns
  QUALIFY row_number() OVER (PARTITION BY j.run_id, j.segment, j.seq ORDER BY t.time_ns NULLS LAST) = 1
),
m AS (SELECT k.*, CASE WHEN k.key = 'accuracy' THEN g.op END AS op FROM k LEFT JOIN g USING (run_id))
SELECT run_id, step, samples_count, key, value, target,
  CASE WHEN value IS NULL OR target IS NULL OR op IS NULL THEN NULL
       WHEN op = '<=' THEN value <= target WHEN op = '<' THEN value < target
       WHEN op = '>=' THEN value >= target ELSE {passes_sql("value", "target")} END AS passed,
  op AS pass_op,
  status, reason, metric, start_ns, time_ns AS result_ns, stop_ns, (stop_ns - start_ns) / 1e9 AS eval_s,
  -- zero-shot sessions (writer 'harness', recorder eval --harness) are ranked apart: they are not part of the
  -- benchmark's evaluation order
  dense_rank() OVER (PARTITION BY run_id, coalesce(writer = 'harness', false)
                     ORDER BY coalesce(start_ns, time_ns), step) AS eval_order,
  worker, writer
FROM m
"""

_SCORES = "CREATE OR REPLACE VIEW scores AS SELECT * FROM _scores"

VIEW_SQL = (_RUN_FACTS, _RUNS, _STEPS, _CHECKPOINTS, _EVALS, _SCORES)
