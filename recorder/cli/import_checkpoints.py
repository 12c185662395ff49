"""`recorder import-checkpoints`: a checkpoint series trained elsewhere (NeMo-RL, an FSDP2 job's torch DCP
archives or snapshots) becomes events of a run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recorder.cli.shared.model_source import ModelConfigOption, TokenizerOption
from recorder.cli.shared.signing_keys import SigningKeyOption, apply_signing_key
from recorder.cli.terminal.output import console, label, line, warning

if TYPE_CHECKING:
    from recorder.adapters.series_importers import SeriesImported
    from recorder.checkpoints.detect import ModelSource
    from recorder.store.run import RunDir


def _run_import(
    root: Path, into: Path, task: Path | None, gbs: int | None, source: Any = None, strict: bool = False
) -> SeriesImported:
    """The import of the series at `root` by the first importer row that claims it
    (recorder.adapters.series_importers), fingerprinted by the checkpoint library."""
    from recorder.adapters.series_importers import ImportRequest, import_series
    from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter
    from recorder.checkpoints.torch_dcp.dcp_listing import missing_shards

    request = ImportRequest(
        into=into,
        fingerprinter=lambda: checkpoint_fingerprinter(task, source),
        missing_shards=missing_shards,
        global_batch_size=gbs,
        strict=strict,
    )
    return import_series(root, request)


def import_checkpoints(
    checkpoint_root: Annotated[
        Path,
        typer.Argument(
            help="The series: NeMo-RL's checkpointing.checkpoint_dir (step_N/), a folder of FSDP2 fsdp2_epoch_N/ "
            "archives, or a run directory with snapshots/step_N/ (torch DCP)."
        ),
    ],
    into: Annotated[Path, typer.Option("--into", help="The run directory to append to (created if missing).")],
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 and write nothing when the series breaks the 6.1 rule.")
    ] = False,
    task: Annotated[
        Path | None,
        typer.Option(help="Fingerprint over this task spec's dev split (default: fixed texts)."),
    ] = None,
    global_batch_size: Annotated[
        int | None,
        typer.Option(
            "--global-batch-size",
            min=1,
            help="Samples per step, for torch DCP checkpoints whose meta file gives neither samples nor it.",
        ),
    ] = None,
    model_config: ModelConfigOption = None,
    tokenizer: TokenizerOption = None,
    signing_key: SigningKeyOption = None,
) -> None:
    """Record a checkpoint series trained elsewhere as weight_update and checkpoint_committed events."""
    from recorder.store.reader import recorded_run_id
    from recorder.store.run import check_run_id

    if not os.path.lexists(into):
        check_run_id(into.name)  # a new run: its folder name is its id, checked before anything is read
    apply_signing_key(signing_key)
    from recorder.checkpoints.detect import ModelSource

    source = ModelSource.of(model_config, tokenizer)
    report = _run_import(checkpoint_root, into, task, global_batch_size, source, strict)
    from rich.table import Table

    rows = report.rows
    table = Table(title=f"{recorded_run_id(report.run)}: {len(rows)} checkpoints (GBS {report.global_batch_size})")
    for col in report.columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for problem in report.problems:
        console.print(line(label("rule:", "yellow"), problem))
    for left_out in report.warnings:
        console.print(warning(left_out))
    console.print(f"imported into {report.run.path}; next: {_next_step(report.run, report.evaluated, task, source)}")
    unfinished = report.unfinished
    for path, why in unfinished:  # after the table: the last lines a script or a person reads
        console.print(line(label("left out:", "yellow"), f"{path}: {why}"))
    if unfinished or (report.problems and strict):
        raise typer.Exit(1)


def _next_step(run: RunDir, evaluated: bool, task: Path | None, source: ModelSource | None) -> str:
    """The one command that works next: replay once evaluations are recorded; else eval, with the task spec
    the series was fingerprinted with when the run records no evaluation settings of its own, and the model
    config and tokenizer the import was given (the evaluation reads them again)."""
    import shlex

    from recorder.store.reader import read_run
    from replay.run_replay import SPEC_NOTE, evaluate_hint

    if evaluated:
        return f"recorder replay {run.path}"
    opened = next((e.data for e in read_run(run).events if e.kind == "run_opened"), {})
    command = evaluate_hint(run.path, opened, task)
    note = f"\n  {SPEC_NOTE}" if command.endswith("SPEC.toml") else ""
    for flag, where in (("--model-config", source and source.config), ("--tokenizer", source and source.tokenizer)):
        if where is not None:
            command += f" {flag} {shlex.quote(str(where))}"
    return command + note


def register(app: typer.Typer) -> None:
    app.command("import-checkpoints")(import_checkpoints)
