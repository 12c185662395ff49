"""`recorder events`: a run's events in merged order, for people debugging a run."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from recorder.cli.terminal.output import console, cut, err, warning
from recorder.cli.terminal.tables import Col, print_fitted, set_wide


def _utc(time_ns: int) -> str:
    return dt.datetime.fromtimestamp(time_ns / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def events(
    run_dir: Annotated[Path, typer.Argument(help="The run directory.")],
    kind: Annotated[list[str] | None, typer.Option("--kind", help="Only this kind (repeatable).")] = None,
    fmt: Annotated[
        Literal["table", "json"], typer.Option("--format", help="table or json (one object a line).")
    ] = "table",
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however narrow the terminal.")] = False,
) -> None:
    """Print a run's events in merged order (for people debugging a run)."""
    from recorder.store.catalogue import check_kind
    from recorder.store.reader import read_run, recorded_run_id

    set_wide(wide)
    for k in kind or []:
        check_kind(k)
    log = read_run(run_dir)
    for skipped in log.skipped:
        err.print(warning(f"{log.run.events}/{skipped}"))
    selected = [e for e in log.events if not kind or e.kind in kind]
    if fmt == "json":
        for e in selected:
            row = {
                c: getattr(e, c)
                for c in ("run_id", "writer", "seq", "time_ns", "mono_ns", "kind", "step", "samples_count", "key")
            }
            row.update(value=e.value, data=e.data, digest=e.digest, segment=e.segment)
            typer.echo(json.dumps(row, sort_keys=False))
        return
    rows = [
        [
            _utc(e.time_ns),
            e.writer,
            str(e.seq),
            e.kind,
            _str(e.step),
            _str(e.samples_count),
            cut(e.key or ""),
            cut(e.value_json or ""),
            cut(e.data_json) if e.data_json != "{}" else "",
        ]
        for e in selected
    ]
    # a narrow terminal leaves out whole columns, least telling first, and says which (never a zero-width one)
    print_fitted(console, EVENTS_COLUMNS, rows, f"{recorded_run_id(log.run)}: {len(selected)} events")
    for torn in log.torn:
        err.print(warning(str(torn)))


EVENTS_COLUMNS = (
    Col("time (UTC)", whole=True, drop=4),
    Col("writer", drop=5),
    Col("seq", "right", whole=True),
    Col("kind", whole=True),
    Col("step", "right"),
    Col("samples", "right", drop=6),
    Col("key", drop=3),
    Col("value", drop=2),
    Col("data", drop=7),
)


def _str(x: int | None) -> str:
    return "" if x is None else str(x)


def register(app: typer.Typer) -> None:
    app.command()(events)
