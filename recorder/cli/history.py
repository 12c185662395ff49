"""`recorder query`, `recorder runs`, `recorder compact`, `recorder plot`: the history of every run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from recorder.cli.output import PIPE_WIDTH, console, err
from recorder.rules import not_comparable

if TYPE_CHECKING:
    import pyarrow as pa

    from recorder.history.views import History


RootOption = Annotated[Path, typer.Option("--root", help="The folder holding the runs.")]
DEFAULT_ROOT = Path("runs")


def _open(root: Path) -> History:
    from recorder.history.views import open_history

    history = open_history(root)
    for problem in history.problems:
        err.print(f"[yellow]warning:[/] {problem}", highlight=False)
    return history


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def _write_table(table: pa.Table, fmt: str, out: Path | None) -> None:
    if fmt == "table":
        view = Table(show_lines=False)
        for name in table.column_names:
            view.add_column(name, overflow="fold")
        for row in table.to_pylist():
            view.add_row(*(_cell(v) for v in row.values()))
        target = Console(file=out.open("w"), width=PIPE_WIDTH, soft_wrap=True) if out else console
        target.print(view)
        target.print(f"{table.num_rows} rows")
        return
    if fmt == "csv":
        import pyarrow.csv as pacsv

        if out:
            pacsv.write_csv(table, out)
        else:
            import io

            buf = io.BytesIO()
            pacsv.write_csv(table, buf)
            typer.echo(buf.getvalue().decode(), nl=False)
        return
    lines = [json.dumps(row, default=str) for row in table.to_pylist()]
    text = "\n".join(lines) + ("\n" if lines else "")
    if out:
        out.write_text(text)
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
) -> None:
    """Read-only SQL (DuckDB) over every run under the root. Writes are refused."""
    with _open(root) as history:
        _write_table(history.query(sql), fmt, out)


def runs(root: RootOption = DEFAULT_ROOT) -> None:
    """One line per run: benchmark, GBS, steps, status, passing step, official minutes."""
    with _open(root) as history:
        table = history.query(
            "SELECT run_id, origin, benchmark, division, global_batch_size AS gbs, steps, status, "
            "passing_step, minutes, scored_as, source, events FROM runs ORDER BY run_id"
        )
        apart = history.query("SELECT run_id, target FROM runs WHERE NOT comparable ORDER BY run_id").to_pylist()
    view = Table(title=f"{table.num_rows} runs under {root}")
    for name in table.column_names:
        view.add_column(
            name, justify="right" if name in ("gbs", "steps", "passing_step", "minutes", "events") else "left"
        )
    for row in table.to_pylist():
        minutes = row["minutes"]
        row["minutes"] = None if minutes is None else f"{minutes:.3f}"
        view.add_row(*(_cell(v) for v in row.values()))
    console.print(view)
    unscored = [r["run_id"] for r in table.to_pylist() if r["scored_as"] is None]
    if unscored:  # scores are files replay writes; a fresh import or evaluation has none yet
        console.print(
            f"{len(unscored)} run(s) not scored yet ({', '.join(unscored[:3])}"
            f"{', ...' if len(unscored) > 3 else ''}): `recorder replay RUN_DIR` or "
            f"`recorder compact --root {root}` writes their scores",
            highlight=False,
            soft_wrap=True,
        )
    if apart:  # judged by another target, or resumed: kept in the history, never an MLPerf result
        console.print(
            "NOT COMPARABLE to MLPerf results: "
            + "; ".join(f"{r['run_id']} ({_apart_reason(r['target'])})" for r in apart),
            highlight=False,
            soft_wrap=True,
        )


def _apart_reason(target: float | None) -> str:
    return not_comparable(target) or "resumed from a checkpoint"


def compact(
    root: RootOption = DEFAULT_ROOT,
    force: Annotated[bool, typer.Option("--force", help="Rewrite files that are already fresh.")] = False,
    scores: Annotated[bool, typer.Option(help="Also write derived/scores.jsonl (needs replay).")] = True,
) -> None:
    """Closed runs get derived/events.parquet (a cache; the segments stay the truth), packed per root."""
    from recorder.errors import RecorderError
    from recorder.history.compact import compact_run, pack_root
    from recorder.run import list_runs
    from replay.scores import write_scores

    failed = 0
    for run in list_runs(root):
        try:
            result = compact_run(run, force=force)
        except RecorderError as e:
            failed += 1
            err.print(f"[bold red]not compacted:[/] {e}", highlight=False)
            continue
        note = f" ({result.reason})" if result.reason else ""
        console.print(f"{result.run_id}: {result.status}, {result.events} events{note}", highlight=False)
        if scores and result.status == "compacted":
            try:
                write_scores(run.path)
            except Exception as e:  # one run's scores (any ruleset, any log) never stop the others
                failed += 1
                why = str(e) if isinstance(e, RecorderError) else f"{type(e).__name__}: {e}"
                err.print(f"[bold red]scores not written:[/] {run.path}: {why}", highlight=False)
    packed, packs = pack_root(root)
    console.print(f"packs: {packed} runs newly packed, {packs} pack files under {root}/.history")
    if failed:
        raise typer.Exit(1)


def plot(
    run_dir: Annotated[Path | None, typer.Argument(help="The run to draw as a timeline.")] = None,
    out: Annotated[Path, typer.Option("-o", "--output", help="The PNG (or SVG/PDF) to write.")] = Path("run.png"),
    root: Annotated[Path | None, typer.Option("--root", help="Draw a metric across every run here instead.")] = None,
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

    if (run_dir is None) == (root is None):
        raise typer.BadParameter("give either RUN_DIR (a timeline) or --root DIR (curves across runs)")
    if run_dir is not None:
        plots.plot_timeline(run_dir, out)
    else:
        assert root is not None
        with _open(root) as history:
            plots.plot_metric(history, metric, out)
    console.print(f"wrote {out}")


def register(app: typer.Typer) -> None:
    app.command()(query)
    app.command()(runs)
    app.command()(compact)
    app.command()(plot)
