"""`recorder query`, `recorder runs`, `recorder plot`: the history of every run."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from recorder.cli.shared.paths import RootOption, check_output, write_failed
from recorder.cli.terminal.json_output import FormatOption, print_document
from recorder.cli.terminal.output import console, cut, err, label, line, make_console, warning
from recorder.cli.terminal.progress import working
from recorder.cli.terminal.tables import Col, print_fitted, set_wide
from recorder.output import output_file, write_output
from recorder.store.run import DEFAULT_ROOT, RunDir

if TYPE_CHECKING:
    import pyarrow as pa

    from recorder.history.views import History
    from recorder.verify import VerifyReport


PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def _open(root: Path, memory_limit: str | None = None) -> History:
    from recorder.history.views import open_history

    history = open_history(root, memory_limit=memory_limit)
    for problem in history.problems:
        err.print(warning(str(problem)))
    return history


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return cut(str(value))


def _query_columns(names: list[str]) -> list[Col]:
    """A query's columns as `runs` fits them: the first (a run id, a step: what names the row) never cut, the
    others wrapped at word boundaries, and, where the terminal is too narrow, left out from the last."""
    return [Col(name, whole=i == 0, drop=i) for i, name in enumerate(names)]


def _write_table(table: pa.Table, fmt: str, out: Path | None) -> None:
    if fmt == "table":
        rows = [[_cell(v) for v in row.values()] for row in table.to_pylist()]
        if out is None:
            print_fitted(console, _query_columns(table.column_names), rows, show_lines=False)
            console.print(f"{table.num_rows} rows")
            return
        from rich.table import Table

        view = Table(show_lines=False)
        for name in table.column_names:
            view.add_column(name, overflow="fold")
        for cells in rows:
            view.add_row(*cells)
        import io

        buffer = io.StringIO()
        target = make_console(file=buffer)
        target.print(view)
        target.print(f"{table.num_rows} rows")
        write_output(out, buffer.getvalue())
        return
    if fmt == "csv":
        import pyarrow.csv as pacsv

        if out:
            with output_file(out) as f:
                pacsv.write_csv(table, f)
        else:
            import io

            buf = io.BytesIO()
            pacsv.write_csv(table, buf)
            typer.echo(buf.getvalue().decode(), nl=False)
        return
    lines = [json.dumps(row, default=str) for row in table.to_pylist()]
    text = "\n".join(lines) + ("\n" if lines else "")
    if out:
        write_output(out, text)
    else:
        typer.echo(text, nl=False)


def query(
    sql: Annotated[
        str,
        typer.Argument(
            help="One read-only SQL statement over the views: events, runs, steps, checkpoints, evals, scores."
        ),
    ],
    root: RootOption = DEFAULT_ROOT,
    fmt: Annotated[
        Literal["table", "csv", "json"], typer.Option("--format", help="table, csv or json (one object a line).")
    ] = "table",
    out: Annotated[Path | None, typer.Option("-o", "--output", help="Write the result here.")] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Stop the query after this many seconds (0: no limit).", min=0)
    ] = 60.0,
    memory_limit: Annotated[
        str | None,
        typer.Option(
            "--memory-limit",
            help="The command's memory while it queries, e.g. 2GB: DuckDB gets what the command does not already "
            "hold, and a query past it is stopped (default: half the machine's memory).",
        ),
    ] = None,
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however narrow the terminal.")] = False,
) -> None:
    """Read-only SQL (DuckDB) over every run under the root: SELECT, EXPLAIN, PIVOT, and DESCRIBE, SHOW and
    SUMMARIZE (reads DuckDB runs as SELECT: `DESCRIBE runs` lists a view's columns). Everything else is
    refused; Ctrl-C stops a query."""
    if out is not None:
        check_output(out)
    set_wide(wide)
    with _open(root, memory_limit) as history:
        result = history.query(sql, timeout_s=timeout)
    try:
        _write_table(result, fmt, out)
    except OSError as e:
        if out is None:
            raise
        raise write_failed(out, e) from e
    if _READS_SCORES.search(sql):
        err.print(
            "note: scores (the runs and scores views) are each run's derived/scores.jsonl as written, not "
            "re-derived here: `recorder runs` and `recorder verify RUN_DIR` check them against the events",
        )


_READS_SCORES = re.compile(r"\b(runs|scores)\b", re.IGNORECASE)


# `recorder runs`' columns; on a narrow terminal those with the highest rank are left out first (tables.py)
RUNS_COLUMNS = (
    Col("run_id", whole=True),
    Col("origin", drop=8),
    Col("benchmark", drop=3),
    Col("division", drop=7),
    Col("gbs", "right", drop=5),
    Col("steps", "right", drop=4),
    Col("status"),
    Col("passing_step", "right"),
    Col("minutes", "right"),
    Col("target", drop=2),
    Col("flags", drop=1),
    Col("scored_as", drop=6),
    Col("source", drop=10),
    Col("events", "right", drop=9),
    Col("proven", drop=11),  # what the score rests on; the UNTRUSTED lines below say it whatever the width
)


def runs(
    root: RootOption = DEFAULT_ROOT,
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however narrow the terminal.")] = False,
    fmt: FormatOption = "table",
) -> None:
    """One line per run: benchmark, GBS, steps, status, passing step, official minutes, the pass target."""
    set_wide(wide)
    with working(f"runs: reading the runs under {root}"), _open(root) as history:
        table = history.query(
            "SELECT run_id, origin, benchmark, division, global_batch_size AS gbs, steps, status, "
            "passing_step, minutes, pass_op || ' ' || pass_target AS target, flags, scored_as, source, events, "
            "path FROM runs ORDER BY run_id"
        )
        apart = history.query("SELECT run_id, target, flags FROM runs WHERE NOT comparable ORDER BY run_id").to_pylist()
    rows = table.to_pylist()
    with working("runs: checking each run's scores against its events"):
        differ, unchecked, untrusted = _recheck_scores(rows)
    if fmt == "json":
        _runs_json(root, rows, differ, unchecked, untrusted, apart)
        return
    cells = []
    for row in rows:
        del row["path"]
        minutes = row["minutes"]
        row["minutes"] = None if minutes is None else f"{minutes:.3f}"
        cells.append([_cell(v) for v in row.values()])
    print_fitted(console, RUNS_COLUMNS, cells, f"{table.num_rows} runs under {root}")
    _print_runs_notes(root, rows, differ, unchecked, untrusted, apart)


def _runs_json(
    root: Path,
    rows: list[dict[str, Any]],
    differ: list[tuple[str, str]],
    unchecked: list[str],
    untrusted: list[str],
    apart: list[dict[str, Any]],
) -> None:
    """`runs --format json`: the document docs/cli.md describes."""
    print_document(
        {
            "root": os.fsdecode(root),
            "runs": rows,
            "untrusted": untrusted,
            "unverified": [{"run_id": run_id, "why": why} for run_id, why in differ],
            "unchecked": unchecked,
            "not_comparable": [{"run_id": r["run_id"], "why": _apart_reason(r["target"], r["flags"])} for r in apart],
        }
    )


def _print_runs_notes(
    root: Path,
    rows: list[dict[str, Any]],
    differ: list[tuple[str, str]],
    unchecked: list[str],
    untrusted: list[str],
    apart: list[dict[str, Any]],
) -> None:
    """The lines under the runs table: what is not scored yet, trust, disagreement, staleness, comparability."""
    unscored = [r["run_id"] for r in rows if r["scored_as"] is None and r["status"] != "no checkpoint"]
    if unscored:  # scores are files replay writes; a fresh import or evaluation has none yet
        console.print(
            f"{len(unscored)} run(s) not scored yet ({', '.join(unscored[:3])}"
            f"{', ...' if len(unscored) > 3 else ''}): `recorder replay RUN_DIR` or "
            f"`recorder compact --root {root}` writes their scores",
            highlight=False,
        )
    _print_trust(untrusted, rows)
    for run_id, why in differ:
        console.print(
            line(label("UNVERIFIED:", "bold red"), f"{run_id}: {why}; shown as the events derive it"),
            "(`recorder replay` rewrites the file)",
        )
    stale = [r["run_id"] for r in rows if "stale" in (r["flags"] or "").split()]
    if stale:  # a command appended events after the scores were written: a cache to refresh, not an alarm
        console.print(
            f"{len(stale)} run(s) shown as their events derive them, their derived/scores.jsonl being older "
            f"than their last events (flag stale): `recorder replay RUN_DIR` refreshes it",
            highlight=False,
        )
    if unchecked:
        from replay.scorekeeping.scores_check import RECHECK_EVENTS

        console.print(
            f"{len(unchecked)} run(s) shown from derived/scores.jsonl without re-deriving it (flag unchecked; "
            f"a command re-derives at most {RECHECK_EVENTS:,} events in all): `recorder verify RUN_DIR` checks "
            "a run's scores file",
            highlight=False,
        )
    if apart:  # judged by another target, or resumed: kept in the history, never an MLPerf result
        console.print(
            "NOT COMPARABLE to MLPerf results: "
            + "; ".join(f"{r['run_id']} ({_apart_reason(r['target'], r['flags'])})" for r in apart),
        )


def _print_trust(untrusted: list[str], rows: list[dict[str, Any]]) -> None:
    """What each shown score rests on, and the runs whose signatures fail."""
    for why in untrusted:  # a signed run's (or RECORDER_TRUST's) signatures fail: its score is no evidence
        console.print(line(label("UNTRUSTED:", "bold red"), why), highlight=False)
    if any(r["proven"] for r in rows):
        console.print("proven: what each score rests on (verify, signatures, audit); without audit, not audited")


def _recheck_scores(rows: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """The score each row shows, re-derived from its run's events (derived/scores.jsonl is a file anyone who
    can write the run can edit). A row that disagrees is shown as the events derive it, flagged unverified;
    rows past the command's budget (replay.scorekeeping.scores_check.RecheckBudget, runs in run-id order) are flagged
    unchecked. Returns (run id, disagreement) pairs and unchecked run ids."""
    from recorder.errors import RecorderError
    from recorder.store.reader import read_run
    from recorder.verify import verify_run
    from replay.scorekeeping.scores_check import RecheckBudget, ScoreMismatch, recheck_shown

    differ: list[tuple[str, str]] = []
    unchecked: list[str] = []
    untrusted: list[str] = []
    budget = RecheckBudget()
    for row in rows:
        row["proven"] = ""
        if row["scored_as"] is None:
            continue
        found: tuple[ScoreMismatch, dict[str, Any]] | dict[str, Any] | None | Literal["unchecked"] = "unchecked"
        row["proven"] = "unchecked"
        if budget.take(row["events"] or 0):
            try:
                run = RunDir.open(row["path"])
                report = verify_run(run, facts=False, keep_events=True)  # the byte layer and its trust
                events = report.events if report.events is not None else read_run(run).events
                found = recheck_shown(run, events, row["scored_as"])
                untrusted.extend(_judge_trust(row, report))
            except RecorderError:  # a damaged run: the views already warned about it
                pass
        if found == "unchecked":
            unchecked.append(row["run_id"])
            row["flags"] = " ".join(filter(None, [row["flags"], "unchecked"]))
        elif isinstance(found, dict):  # a stale cache (derived before the last events): shown as they derive
            row.update({k: found.get(k) for k in ("status", "passing_step", "minutes")})
            row["flags"] = " ".join(filter(None, [row["flags"], "stale"]))
        elif found is not None:
            mismatch, fresh = found
            differ.append((row["run_id"], str(mismatch.problem())))
            row.update({k: fresh.get(k) for k in ("status", "passing_step", "minutes")})
            row["flags"] = " ".join(filter(None, [row["flags"], "unverified"]))
    return differ, unchecked, untrusted


def _judge_trust(row: dict[str, Any], report: VerifyReport) -> list[str]:
    """A signed run (or one under RECORDER_TRUST) whose signatures fail is flagged untrusted, its first
    problem shown; the `proven` column says what the row's verdict rests on (recorder.verify.proof)."""
    from recorder.verify.proof import audited, proof_words, signatures_proven
    from recorder.verify.trust import TRUST_RULES

    failed = [p for p in [*report.untrusted, *report.problems] if p.rule in TRUST_RULES or p.rule == "signature"]
    if failed:
        row["flags"] = " ".join(filter(None, [row["flags"], "untrusted"]))
    words = proof_words(signatures_proven(report), audited(report.run, row["passing_step"]))
    row["proven"] = words.removeprefix("proven by ").replace(", not audited", "")
    return (
        [f"{row['run_id']}: {failed[0]}" + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else "")]
        if failed
        else []
    )


def _apart_reason(target: float | None, flags: str | None) -> str:
    """Why a run of the runs view does not compare: its target, a resume, else its evaluation (flag
    other-evaluation; its scores' `why` says how it differs, from recorder.comparability)."""
    from recorder.comparability import target_reason  # it reads event payloads: pyarrow, loaded on use

    resumed = "resumed" in (flags or "").split()
    return target_reason(target) or (
        "resumed from a checkpoint" if resumed else "evaluated otherwise than the benchmark"
    )


def plot(
    ctx: typer.Context,
    run_dir: Annotated[Path | None, typer.Argument(help="The run to draw as a timeline.")] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="The PNG, SVG or PDF to write (default: RUN_DIR/derived/timeline.png, or ROOT/plot-METRIC.png).",
        ),
    ] = None,
    root: Annotated[
        Path | None,
        typer.Option("--root", envvar="RECORDER_ROOT", help="Draw a metric across every run here instead."),
    ] = None,
    metric: Annotated[
        str,
        typer.Option(
            "--metric",
            help="With --root: a column of the steps view, or an evaluation key (accuracy, a zero-shot task).",
        ),
    ] = "reward",
) -> None:
    """A timeline of one run (steps, saves, evaluations, run_stop per interpretation), or curves across runs."""
    from recorder.history import plot as plots

    if run_dir is not None and root is not None and _root_from_environment(ctx):
        root = None  # RECORDER_ROOT is where runs are, not a second thing to draw: RUN_DIR is what was asked
    if (run_dir is None) == (root is None):
        raise typer.BadParameter("give either RUN_DIR (a timeline) or --root DIR (curves across runs)")
    if out is not None:
        check_output(out, suffixes=PLOT_SUFFIXES)
    try:
        if run_dir is not None:
            out = out or RunDir.open(run_dir).derived / "timeline.png"
            plots.plot_timeline(run_dir, out)
        else:
            assert root is not None
            out = out or root / f"plot-{metric}.png"
            with _open(root) as history:
                plots.plot_metric(history, metric, out)
    except OSError as e:
        raise write_failed(out or Path("."), e) from e
    console.print(f"wrote {out}")


def _root_from_environment(ctx: typer.Context) -> bool:
    """Whether `--root` came from RECORDER_ROOT rather than the command line."""
    source = ctx.get_parameter_source("root")
    return source is not None and source.name == "ENVIRONMENT"


def register(app: typer.Typer) -> None:
    app.command()(query)
    app.command()(runs)
    app.command()(plot)
