"""`recorder compact`: each closed run's events as a Parquet cache (the segments stay the truth), packed per
root, with its derived scores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recorder.cli.shared.paths import RootOption
from recorder.cli.terminal.output import console, err, label, line
from recorder.store.run import DEFAULT_ROOT


def compact(
    root: RootOption = DEFAULT_ROOT,
    force: Annotated[bool, typer.Option("--force", help="Rewrite files that are already fresh.")] = False,
    scores: Annotated[bool, typer.Option(help="Also write derived/scores.jsonl (needs replay).")] = True,
) -> None:
    """Closed runs get derived/events.parquet (a cache; the segments stay the truth), packed per root."""
    from recorder.history.lock import compaction_lock
    from recorder.store.run import list_runs

    list_runs(root)  # a missing root is refused before the lock file is created

    def waiting(lock: Path) -> None:
        err.print(f"waiting for another `recorder compact` of {root} to finish (it holds {lock})")

    with compaction_lock(root, waiting):
        failed = _compact_runs(root, force=force, scores=scores)  # listed again: a waiter sees the holder's work
    if failed:
        raise typer.Exit(1)


def _compact_runs(root: Path, *, force: bool, scores: bool) -> int:
    """Compact each run, then pack the root; how many runs failed."""
    from recorder.errors import RecorderError
    from recorder.history.compact import compact_run, pack_root
    from recorder.store.run import list_runs
    from replay.scorekeeping.scores import write_scores

    failed = 0
    for run in list_runs(root):
        try:
            result = compact_run(run, force=force)
        except RecorderError as e:
            failed += 1
            err.print(line(label("not compacted:", "bold red"), str(e)))
            continue
        note = f" ({result.reason})" if result.reason else ""
        console.print(f"{result.run_id}: {result.status}, {result.events} events{note}", highlight=False)
        if scores and result.status == "compacted":
            try:
                write_scores(run.path)
            except Exception as e:  # one run's scores (any ruleset, any log) never stop the others
                failed += 1
                why = str(e) if isinstance(e, RecorderError) else f"{type(e).__name__}: {e}"
                err.print(line(label("scores not written:", "bold red"), f"{run.path}: {why}"))
    packed, packs = pack_root(root)
    console.print(f"packs: {packed} runs newly packed, {packs} pack files under {root}/.history")
    return failed


def register(app: typer.Typer) -> None:
    app.command()(compact)
