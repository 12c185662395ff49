"""`recorder import-checkpoints`: a checkpoint series trained elsewhere (NeMo-RL) becomes events of a run."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from recorder.cli.output import console, label, line
from recorder.cli.signing import SigningKeyOption, apply_signing_key


def _utc_ms(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1e3, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def import_checkpoints(
    checkpoint_root: Annotated[Path, typer.Argument(help="NeMo-RL's checkpointing.checkpoint_dir (holds step_N/).")],
    into: Annotated[Path, typer.Option("--into", help="The run directory to append to (created if missing).")],
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when the series breaks the 6.1 rule.")] = False,
    task: Annotated[
        Path | None,
        typer.Option(help="Hugging Face weights: fingerprint over this task spec's dev split (default: fixed texts)."),
    ] = None,
    signing_key: SigningKeyOption = None,
) -> None:
    """Record a NeMo-RL deferred-evaluation series as weight_update and checkpoint_committed events."""
    from recorder.adapters.nemo import import_checkpoints as run_import
    from recorder.reader import recorded_run_id
    from recorder.run import check_run_id
    from trainer.policy.hf_fingerprint import hf_fingerprinter

    if not os.path.lexists(into):
        check_run_id(into.name)  # a new run: its folder name is its id, checked before anything is read
    apply_signing_key(signing_key)
    report = run_import(checkpoint_root, into, fingerprint=hf_fingerprinter(task))
    table = Table(
        title=f"{recorded_run_id(report.run)}: {len(report.checkpoints)} checkpoints (GBS {report.global_batch_size})"
    )
    for col in ("step", "samples", "weight update (UTC)", "path"):
        table.add_column(col)
    for c in report.checkpoints:
        table.add_row(str(c.step), str(c.samples), _utc_ms(c.weight_update_ms), str(c.path))
    console.print(table)
    for problem in report.problems:
        console.print(line(label("rule:", "yellow"), problem))
    step = (
        f"recorder replay {report.run.path}"
        if report.evaluated
        else "evaluate the checkpoints (eval_start/eval_result/eval_stop events), then recorder replay "
        f"{report.run.path}"
    )
    console.print(f"imported into {report.run.path}; next: {step}", highlight=False)
    if report.problems and strict:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("import-checkpoints")(import_checkpoints)
