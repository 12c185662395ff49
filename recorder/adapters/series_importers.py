"""The importers of checkpoint series trained elsewhere, one row each: which folder it claims and how it runs,
giving what `recorder import-checkpoints` shows (its table's columns and a row per checkpoint, the rule's
problems, the warnings, the steps left out).

Each row is a format plugin's importer (`recorder.checkpoints.formats.FormatPlugin.importer` names it as
"module:attr"). The command asks them in the plugins' order and runs the first that claims the folder: an
FSDP2 job's torch DCP archives or snapshots (recorder.adapters.dcp), then NeMo-RL's `step_N/`
(recorder.adapters.nemo), last (its plugin asks it last) because it claims any folder and names what one that
holds no series lacks. Nothing outside these tables asks a format's name."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from recorder.adapters import dcp, nemo
from recorder.adapters.nemo import MissingShards
from recorder.adapters.series_import import Fingerprinter
from recorder.checkpoints.formats import ordered
from recorder.plugin_registry import resolve
from recorder.store.run import RunDir

Row = tuple[str, ...]
COLUMNS: Row = ("step", "samples", "weight update (UTC)")  # every importer's first columns
# The writer an importer the project does not ship records its series as (the catalogue lets it record the
# four kinds recorder.adapters.series_import.write_series appends).
REGISTERED_WRITER = "import-series"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportRequest:
    """What the command was told, and the functions of the checkpoint library it passes in (the adapters
    import no torch)."""

    into: Path  # the run directory to append to (created if missing)
    fingerprinter: Callable[[], Fingerprinter]  # made when an importer needs it: a bad task spec refused then
    missing_shards: MissingShards
    global_batch_size: int | None  # --global-batch-size
    strict: bool  # --strict


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesImported:
    """What an import recorded, as the command shows it."""

    run: RunDir
    global_batch_size: int
    columns: Row
    rows: list[Row]  # one per checkpoint imported
    problems: list[str]  # departures from the rule
    warnings: list[str]  # files left out of a manifest, named
    evaluated: bool  # the run already holds evaluation results
    unfinished: list[tuple[Path, str]] = field(default_factory=list)  # (a step left out, why, in words)


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesImporter:
    """One layout of checkpoint series on disk, as `import-checkpoints` finds and imports it."""

    name: str
    claims: Callable[[Path], bool]  # the folder given holds this importer's series
    run: Callable[[Path, ImportRequest], SeriesImported]


def utc_ns(ns: int) -> str:
    """Unix-epoch ns as the table shows a time (UTC, milliseconds)."""
    # whole seconds and microseconds apart: a float of Unix-epoch nanoseconds cannot hold every millisecond
    at = dt.datetime.fromtimestamp(ns // 10**9, dt.UTC) + dt.timedelta(microseconds=ns % 10**9 // 1000)
    return at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _claims_dcp(root: Path) -> bool:
    return dcp.layout_of(root) is not None


def _run_dcp(root: Path, request: ImportRequest) -> SeriesImported:
    fingerprint = request.fingerprinter()
    report = dcp.import_checkpoints(
        root, request.into, fingerprint=fingerprint, global_batch_size=request.global_batch_size, strict=request.strict
    )
    rows: list[Row] = [
        (str(c.step), str(c.samples), utc_ns(c.weight_update_ns), c.timing, str(c.path)) for c in report.checkpoints
    ]
    return SeriesImported(
        run=report.run,
        global_batch_size=report.global_batch_size,
        columns=(*COLUMNS, "timing", "path"),
        rows=rows,
        problems=report.problems,
        warnings=report.warnings,
        evaluated=report.evaluated,
    )


def _run_nemo(root: Path, request: ImportRequest) -> SeriesImported:
    if request.global_batch_size is not None:
        nemo.discover(root)  # a folder that holds no NeMo-RL series is named as what it is, first
        raise nemo.NemoImportError(
            f"{root}: a NeMo-RL series gives its global batch size in config.yaml: leave out --global-batch-size"
        )
    report = nemo.import_checkpoints(
        root,
        request.into,
        fingerprint=request.fingerprinter(),
        strict=request.strict,
        missing_shards=request.missing_shards,
    )
    ns = nemo.NS_PER_MS
    rows: list[Row] = [
        (str(c.step), str(c.samples), utc_ns(c.weight_update_ms * ns), str(c.path)) for c in report.checkpoints
    ]
    return SeriesImported(
        run=report.run,
        global_batch_size=report.global_batch_size,
        columns=(*COLUMNS, "path"),
        rows=rows,
        problems=report.problems,
        warnings=report.warnings,
        evaluated=report.evaluated,
        unfinished=[(s.path, s.said) for s in report.left_out],
    )


FSDP2_DCP = SeriesImporter(name="fsdp2-dcp", claims=_claims_dcp, run=_run_dcp)
NEMO = SeriesImporter(name="nemo-rl", claims=lambda root: True, run=_run_nemo)  # names what a folder lacks


def all_importers() -> tuple[SeriesImporter, ...]:
    """Every plugin's importer, in the order the command asks them (recorder.checkpoints.formats.ordered)."""
    plugins = ordered("importer")
    return tuple(
        resolve(p.importer, SeriesImporter, f"checkpoint format {p.name}") for p in plugins if p.importer is not None
    )


def import_series(root: Path, request: ImportRequest) -> SeriesImported:
    """Import the series at `root` with the first importer that claims it."""
    return next(row for row in all_importers() if row.claims(root)).run(root, request)
