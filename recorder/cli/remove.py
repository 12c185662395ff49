"""`recorder rm`: runs deleted whole, keeping the ones someone vouches for unless forced."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recorder.cli.terminal.output import console, err, label, line


def rm(
    runs: Annotated[list[Path], typer.Argument(help="The run directories to remove (each holds events/).")],
    force: Annotated[
        bool, typer.Option("--force", help="Also remove signed runs, adopted ones and runs with an open segment.")
    ] = False,
) -> None:
    """Delete runs, each whole or not at all: its events, checkpoints and derived files.

    A signed run, one with segments adopted on resume and one with an open segment (its writer may still be
    running) are kept unless --force. Links inside a run are removed, never followed; a run holding a mount
    point is refused. Nothing is recorded in other runs; the root's packs stop serving the removed run, and the
    next `recorder compact` drops its rows.
    """
    from recorder.errors import RecorderError
    from recorder.history.removal import remove_run

    failed: RecorderError | None = None
    for path in runs:
        try:
            removed = remove_run(path, force=force)
        except RecorderError as e:
            if len(runs) == 1:
                raise
            err.print(line(label("error:", "bold red"), str(e)), highlight=False)
            failed = failed or e
            continue
        packed = "; its rows in the root's packs are no longer read" if removed.packed else ""
        console.print(
            f"removed {removed.path} (run {removed.run_id}: {removed.files} files, {_size(removed.bytes)}){packed}",
            highlight=False,
        )
    if failed is not None:
        raise typer.Exit(failed.exit_code)


def _size(n: int) -> str:
    """Bytes as a person reads them: 532 bytes, 14.2 KiB, 3.1 MiB, 2.0 GiB."""
    if n < 1024:
        return f"{n} bytes"
    value, unit = n / 1024, "KiB"
    for larger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, larger
    return f"{value:.1f} {unit}"


def register(app: typer.Typer) -> None:
    app.command()(rm)
