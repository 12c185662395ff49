"""History: read-only DuckDB views over every run under a root.

Views: `events` (every event of every run, plus its `segment`), `runs` (one row per run), `steps`,
`checkpoints`, `evals` and `scores`. Closed, compacted runs are read natively from
`derived/events.parquet`; every other run from its segments through pyarrow, combined into one
Arrow table first (DuckDB scans one-row record batches about 50x slower). Scores are the files replay
writes (`derived/scores.jsonl`): the core never imports `replay`.

Read-only is enforced twice: only SELECT-like statements are accepted, and after the views are built the
connection loses file-system access (except the compacted files the views read) and its configuration
is locked, so `read_csv('/etc/passwd')` or `ATTACH` inside a query fail too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from recorder.compact import fresh_parquet
from recorder.errors import InputError, RecorderError
from recorder.events import arrow_schema
from recorder.reader import read_run
from recorder.run import RunDir, list_runs
from recorder.verify import check_segment

if TYPE_CHECKING:
    import duckdb

VIEWS = ("events", "runs", "steps", "checkpoints", "evals", "scores")
SCORES_NAME = "scores.jsonl"
SCORE_COLUMNS = pa.schema([
    ("run_id", pa.string()), ("ruleset", pa.string()), ("interpretation", pa.string()), ("status", pa.string()),
    ("passing_step", pa.int64()), ("run_start_ns", pa.int64()), ("run_stop_ns", pa.int64()),
    ("minutes", pa.float64()), ("checker", pa.string()), ("mlperf_logging_version", pa.string()),
    ("why", pa.string()),
])
# Statements a query may be; everything else (INSERT, CREATE, COPY, ATTACH, SET, INSTALL, ...) is refused.
_READ_ONLY = ("SELECT", "EXPLAIN")


class HistoryError(InputError):
    """Base of the history's errors: a query or a root it cannot answer."""


class QueryRefusedError(HistoryError):
    """A statement that would write, attach, copy, install or change settings."""


class QueryError(HistoryError):
    """SQL that DuckDB cannot parse or bind (a typo, an unknown view or column)."""


@dataclass(frozen=True)
class RunSource:
    """Where the history read one run from."""

    run_id: str
    path: Path
    source: str  # "parquet" (fresh compacted file) | "segments"
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

    def query(self, sql: str) -> pa.Table:
        """Run one read-only statement; the result as an Arrow table."""
        import duckdb

        statement = _single_read_only(self.con, sql)
        try:
            return self.con.sql(statement).to_arrow_table()
        except duckdb.CatalogException as e:
            raise QueryError(f"{_first_line(e)}\n  the views are: {', '.join(VIEWS)}") from e
        except duckdb.PermissionException as e:
            raise QueryRefusedError(f"refused: {_first_line(e)} (queries may read only the history views)") from e
        except duckdb.Error as e:
            raise QueryError(f"query failed: {_first_line(e)}") from e

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_line(e: Exception) -> str:
    return " ".join(str(e).split("\n\n")[0].split())


def _single_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(f"malformed SQL: {_first_line(e)}") from e
    if len(statements) != 1:
        raise QueryError(f"give exactly one SQL statement (got {len(statements)})")
    kind = statements[0].type.name
    if kind not in _READ_ONLY:
        raise QueryRefusedError(f"refused: {kind} statement; `recorder query` is read-only (SELECT only)")
    return sql


def _empty_events() -> pa.Table:
    return arrow_schema().empty_table().append_column("segment", pa.array([], pa.string()))


def read_scores(run: RunDir) -> list[dict[str, Any]]:
    """The rows of `derived/scores.jsonl`, each checked against the contract's columns."""
    path = run.derived / SCORES_NAME
    if not path.exists():
        return []
    rows = []
    for line_no, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise HistoryError(f"{path} line {line_no}: not JSON ({e}); rerun `recorder score {run.path}`") from e
        if not isinstance(row, dict):
            raise HistoryError(f"{path} line {line_no}: not a JSON object")
        rows.append({name: row.get(name) for name in SCORE_COLUMNS.names} | {"run_id": row.get("run_id") or run.run_id})
    return rows


def _scores_table(rows: list[dict[str, Any]], path: str) -> pa.Table:
    try:
        return pa.Table.from_pylist(rows, schema=SCORE_COLUMNS)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise HistoryError(f"{path}: a score has a value of the wrong type ({e})") from e


def _load(runs: list[RunDir]) -> tuple[list[RunSource], list[str], pa.Table, pa.Table, list[str]]:
    """Sources of every run: (runs, parquet files, live events, scores, problems)."""
    sources: list[RunSource] = []
    parquet: list[str] = []
    live: list[pa.Table] = []
    scores: list[pa.Table] = []
    problems: list[str] = []
    for run in runs:
        try:
            fresh = fresh_parquet(run)
            if fresh is not None:
                n_segments = sum(1 for p in run.events.iterdir() if p.name.endswith(".arrows"))
                sources.append(RunSource(run.run_id, run.path, "parquet", fresh[1], n_segments, 0, 0))
                parquet.append(str(fresh[0].resolve()))
            else:
                log = read_run(run)
                altered = [p for seg in log.segments for p in check_segment(seg, None)]
                if altered:
                    raise HistoryError(f"`recorder verify` fails: {altered[0]}")
                table = log.table()
                live.append(table)
                sources.append(RunSource(run.run_id, run.path, "segments", table.num_rows, len(log.segments),
                                         sum(1 for s in log.segments if not s.closed),
                                         sum(t.bytes_lost for t in log.torn)))
                problems.extend(f"{run.path}: {t} (its complete events are included)" for t in log.torn)
            rows = read_scores(run)
            if rows:
                scores.append(_scores_table(rows, str(run.derived / SCORES_NAME)))
        except RecorderError as e:
            problems.append(f"{run.path}: left out of the history: {e}")
    events = pa.concat_tables(live).combine_chunks() if live else _empty_events()
    score_table = pa.concat_tables(scores) if scores else SCORE_COLUMNS.empty_table()
    return sources, parquet, events, score_table, problems


def _runs_table(sources: list[RunSource]) -> pa.Table:
    return pa.Table.from_pylist(
        [{"run_id": s.run_id, "path": str(s.path), "source": s.source, "events": s.events,
          "segments": s.segments, "open_segments": s.open_segments} for s in sources],
        schema=pa.schema([("run_id", pa.string()), ("path", pa.string()), ("source", pa.string()),
                          ("events", pa.int64()), ("segments", pa.int64()), ("open_segments", pa.int64())]))


def open_history(root: Path | str, *, threads: int | None = None) -> History:
    """Build the views over every run under `root`. Damaged runs are left out and named in `.problems`."""
    root = Path(root)
    if not root.is_dir():
        raise HistoryError(f"{root}: no such root directory (give --root DIR, the folder holding the runs)")
    return open_runs(root, list_runs(root), threads=threads)


def open_runs(root: Path, runs: list[RunDir], *, threads: int | None = None) -> History:
    """The views over the given runs only (`recorder plot` draws one run through them)."""
    import duckdb

    sources, parquet, live, scores, problems = _load(runs)
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    con.execute("SET enable_object_cache = true")  # keeps Parquet footers between queries
    con.register("_live_events", live)
    con.register("_scores", scores)
    con.register("_run_sources", _runs_table(sources))
    create_views(con, parquet)
    lock_down(con, parquet)
    return History(root, con, sources, problems)


def events_source_sql(parquet: list[str]) -> str:
    """The FROM clause of the `events` view: compacted files, then live runs."""
    columns = ", ".join([*arrow_schema().names, "segment"])
    live = f"SELECT {columns} FROM _live_events"
    if not parquet:
        return live
    files = ", ".join("'" + p.replace("'", "''") + "'" for p in parquet)
    return f"SELECT {columns} FROM read_parquet([{files}]) UNION ALL {live}"


def create_views(con: duckdb.DuckDBPyConnection, parquet: list[str], events_sql: str | None = None) -> None:
    """The views, over `events_sql` (default: the root's sources). The bench reuses this on a native table."""
    con.execute(f"CREATE VIEW events AS {events_sql or events_source_sql(parquet)}")
    for sql in VIEW_SQL:
        con.execute(sql)


def lock_down(con: duckdb.DuckDBPyConnection, parquet: list[str]) -> None:
    """No file access but the compacted files the views read, and no way to change that back."""
    if parquet:
        quoted = ", ".join("'" + p.replace("'", "''") + "'" for p in parquet)
        con.execute(f"SET allowed_paths = [{quoted}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


# Facts of each run from its own events; imported runs carry them as mllog lines (`value` is JSON text).
_RUN_FACTS = """
CREATE VIEW _run_facts AS
SELECT run_id,
  coalesce(any_value(data->>'benchmark') FILTER (kind = 'run_opened'),
           any_value(value->>'$') FILTER (kind = 'mllog_line' AND key = 'submission_benchmark')) AS benchmark,
  coalesce(any_value(data->>'division') FILTER (kind = 'run_opened'),
           any_value(value->>'$') FILTER (kind = 'mllog_line' AND key = 'submission_division')) AS division,
  coalesce(any_value(TRY_CAST(data->>'global_batch_size' AS BIGINT)) FILTER (kind = 'run_opened'),
           any_value(TRY_CAST(value AS BIGINT)) FILTER (kind = 'mllog_line' AND key = 'global_batch_size'))
    AS global_batch_size,
  max(step) FILTER (kind IN ('weight_update', 'step_metrics', 'block_stop')
                    OR (kind = 'mllog_line' AND key = 'tracked_stats')) AS steps,
  any_value(data->>'status') FILTER (kind = 'train_stop') AS train_status,
  any_value(TRY_CAST(value AS DOUBLE)) FILTER (kind = 'mllog_line' AND key = 'target_accuracy') AS target_accuracy,
  coalesce(min(time_ns) FILTER (kind = 'run_start'),
           min(TRY_CAST(data->>'time_ms' AS BIGINT) * 1000000) FILTER (kind = 'mllog_line' AND key = 'run_start'))
    AS run_start_ns,
  bool_or(writer = 'import') AS imported
FROM events
WHERE kind IN ('run_opened', 'run_start', 'weight_update', 'step_metrics', 'block_stop', 'train_stop')
   OR (kind = 'mllog_line' AND key IN ('submission_benchmark', 'submission_division', 'global_batch_size', 'target_accuracy', 'run_start',
                                      'tracked_stats'))
GROUP BY run_id
"""

# One row per run. Status, passing step and minutes come from the score replay wrote for the `official`
# interpretation, or `as-recorded` when official derives nothing (imported logs have no weight updates).
_RUNS = """
CREATE VIEW runs AS
WITH score AS (
  SELECT * FROM _scores
  WHERE interpretation IN ('official', 'as-recorded')
  QUALIFY row_number() OVER (PARTITION BY run_id
                             ORDER BY status = 'none', interpretation <> 'official') = 1
)
SELECT r.run_id, f.benchmark, f.division, f.global_batch_size, f.steps, f.train_status,
  s.status, s.passing_step, s.minutes, s.interpretation AS scored_as, f.run_start_ns,
  CASE WHEN f.imported THEN 'imported' ELSE 'recorded' END AS origin,
  r.source, r.events, r.segments, r.open_segments, r.path
FROM _run_sources r LEFT JOIN _run_facts f USING (run_id) LEFT JOIN score s USING (run_id)
"""

# One row per trained step. Imported reference logs report a step's metrics in `tracked_stats` lines.
_STEPS = """
CREATE VIEW steps AS
WITH m AS (
  SELECT run_id, step, samples_count, time_ns, NULL::BIGINT AS weight_update_ns,
    TRY_CAST(coalesce(data->>'loss', data->>'reduced_train_loss') AS DOUBLE) AS loss,
    TRY_CAST(data->>'reward' AS DOUBLE) AS reward, TRY_CAST(data->>'grad_norm' AS DOUBLE) AS grad_norm,
    TRY_CAST(coalesce(data->>'tokens', data->>'global_valid_toks') AS DOUBLE) AS tokens,
    TRY_CAST(coalesce(data->>'step_s', data->>'train_step_time') AS DOUBLE) AS step_s,
    TRY_CAST(data->>'checkpoint_block_s' AS DOUBLE) AS checkpoint_block_s
  FROM events WHERE kind = 'step_metrics'
    -- an importer turns every tracked_stats line into step metrics, also those of a validation
    AND (writer <> 'import' OR json_exists(data, '$.reward') OR json_exists(data, '$.train_step_time'))
  UNION ALL
  SELECT run_id, step, samples_count, NULL, time_ns, NULL, NULL, NULL, NULL, NULL, NULL
  FROM events WHERE kind = 'weight_update'
  UNION ALL
  SELECT run_id, step, samples_count, TRY_CAST(data->>'time_ms' AS BIGINT) * 1000000, NULL,
    TRY_CAST(value->>'reduced_train_loss' AS DOUBLE), TRY_CAST(value->>'reward' AS DOUBLE),
    TRY_CAST(value->>'grad_norm' AS DOUBLE), TRY_CAST(value->>'global_valid_toks' AS DOUBLE),
    TRY_CAST(value->>'train_step_time' AS DOUBLE), NULL
  FROM events WHERE kind = 'mllog_line' AND key = 'tracked_stats' AND step IS NOT NULL
    AND (json_exists(value, '$.reward') OR json_exists(value, '$.train_step_time'))
)
SELECT run_id, step, max(samples_count) AS samples_count, max(weight_update_ns) AS weight_update_ns,
  max(time_ns) AS metrics_ns, max(loss) AS loss, max(reward) AS reward, max(grad_norm) AS grad_norm,
  max(tokens) AS tokens, max(step_s) AS step_s, max(checkpoint_block_s) AS checkpoint_block_s
FROM m GROUP BY run_id, step
"""

_CHECKPOINTS = """
CREATE VIEW checkpoints AS
SELECT run_id, step, samples_count, time_ns AS committed_ns,
  TRY_CAST(data->>'weight_update_ns' AS BIGINT) AS weight_update_ns,
  TRY_CAST(data->>'save_begin_ns' AS BIGINT) AS save_begin_ns,
  TRY_CAST(data->>'save_end_ns' AS BIGINT) AS save_end_ns,
  TRY_CAST(data->>'blocked_ns' AS BIGINT) / 1e9 AS blocked_s,
  (TRY_CAST(data->>'save_end_ns' AS BIGINT) - TRY_CAST(data->>'save_begin_ns' AS BIGINT)) / 1e9 AS save_s,
  (TRY_CAST(data->>'save_end_ns' AS BIGINT) - TRY_CAST(data->>'save_begin_ns' AS BIGINT)
   - TRY_CAST(data->>'blocked_ns' AS BIGINT)) / 1e9 AS background_s,
  data->>'path' AS path, data->>'sha256' AS sha256, TRY_CAST(data->>'bytes' AS BIGINT) AS bytes
FROM events WHERE kind = 'checkpoint_committed'
"""

# One row per evaluation result or failure, with the interval around it (the same segment's nearest
# eval_start before and eval_stop after) and its place in the evaluation order. `passed` reads the 6.1.0
# checker (`> target`); `value >= target` is one comparison away. Imported logs: eval_accuracy lines.
_EVALS = """
CREATE VIEW evals AS
WITH r AS (
  SELECT e.run_id, e.writer, e.segment, e.step, e.samples_count, e.key, TRY_CAST(e.value AS DOUBLE) AS value,
    e.time_ns, e.data->>'metric' AS metric,
    coalesce(TRY_CAST(e.data->>'target' AS DOUBLE), i.target) AS target, 'ok' AS status, NULL AS reason
  FROM events e LEFT JOIN _import_facts i USING (run_id) WHERE e.kind = 'eval_result'
  UNION ALL
  SELECT run_id, writer, segment, step, samples_count, NULL, NULL, time_ns, NULL, NULL, 'failed',
    data->>'reason'
  FROM events WHERE kind = 'eval_failed'
  UNION ALL
  SELECT run_id, writer, segment, step, samples_count, 'accuracy', TRY_CAST(value AS DOUBLE), time_ns,
    NULL, target, 'ok', NULL
  FROM _imported_lines
  WHERE key = 'eval_accuracy' AND run_id NOT IN (SELECT run_id FROM events WHERE kind = 'eval_result')
),
s AS (
  SELECT run_id, segment, step, time_ns, data->>'worker' AS worker FROM events WHERE kind = 'eval_start'
  UNION ALL
  SELECT run_id, segment, step, time_ns, NULL FROM _imported_lines WHERE key = 'eval_start'
),
t AS (
  SELECT run_id, segment, step, time_ns FROM events WHERE kind = 'eval_stop'
  UNION ALL
  SELECT run_id, segment, step, time_ns FROM _imported_lines WHERE key = 'eval_stop'
),
j AS (
  SELECT r.*, s.time_ns AS start_ns, s.worker
  FROM r ASOF LEFT JOIN s ON r.run_id = s.run_id AND r.segment = s.segment AND r.step = s.step
    AND r.time_ns >= s.time_ns
)
SELECT j.run_id, j.step, j.samples_count, j.key, j.value, j.target,
  CASE WHEN j.value IS NULL OR j.target IS NULL THEN NULL ELSE j.value > j.target END AS passed,
  j.status, j.reason, j.metric, j.start_ns, j.time_ns AS result_ns, t.time_ns AS stop_ns,
  (t.time_ns - j.start_ns) / 1e9 AS eval_s,
  dense_rank() OVER (PARTITION BY j.run_id ORDER BY coalesce(j.start_ns, j.time_ns), j.step) AS eval_order,
  j.worker, j.writer
FROM j ASOF LEFT JOIN t ON j.run_id = t.run_id AND j.segment = t.segment AND j.step = t.step
  AND t.time_ns >= j.time_ns
"""

_SCORES = "CREATE VIEW scores AS SELECT * FROM _scores"

# The evaluation lines of imported logs, with the time the line itself carries and the step its
# samples_count means (eval_accuracy lines often carry only samples_count).
_IMPORTED_LINES = """
CREATE VIEW _import_facts AS
SELECT run_id, any_value(TRY_CAST(value AS BIGINT)) FILTER (key = 'global_batch_size') AS gbs,
  any_value(TRY_CAST(value AS DOUBLE)) FILTER (key = 'target_accuracy') AS target
FROM events WHERE kind = 'mllog_line' AND key IN ('global_batch_size', 'target_accuracy') GROUP BY run_id;
CREATE VIEW _imported_lines AS
WITH g AS (SELECT * FROM _import_facts)
SELECT e.run_id, e.writer, e.segment, e.key, e.value, coalesce(e.step, e.samples_count // g.gbs) AS step,
  e.samples_count, TRY_CAST(e.data->>'time_ms' AS BIGINT) * 1000000 AS time_ns, g.target
FROM events e LEFT JOIN g USING (run_id)
WHERE e.kind = 'mllog_line' AND e.key IN ('eval_start', 'eval_accuracy', 'eval_stop')
"""

VIEW_SQL = (_RUN_FACTS, _RUNS, _STEPS, _CHECKPOINTS, _IMPORTED_LINES, _EVALS, _SCORES)
