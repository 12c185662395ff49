"""A checkpoint format as one module, laid out as a shipped one is: a series of `save_N/` folders, each the
model's tensors in `tensors.st` (written by the real safetensors library, a name no shipped reader reads), its
config.json and tokenizer, and a `save.json` giving the step, the samples and the time of the weight update.

The module holds its reader (detection and loading) and its importer, and `PLUGIN`, the one object that
carries them with its recorded row (how verify checks its files), naming the two rows as "module:attr". A
team's package registers `PLUGIN` through its entry point (`[recorder.checkpoints.formats]`). Shipped, the
reader goes in a module of recorder/checkpoints/ and the importer in one beside
recorder/adapters/dcp.py (the parts table keeps the adapters off torch), and the plugin in
recorder/checkpoints/formats.py with its name in `CheckpointFormat`: three product files."""

from __future__ import annotations

import json
import re
from pathlib import Path

from recorder.adapters.series_import import SeriesCommit, loaded_files, step_problems, write_series
from recorder.adapters.series_importers import (
    COLUMNS,
    REGISTERED_WRITER,
    ImportRequest,
    SeriesImported,
    SeriesImporter,
    utc_ns,
)
from recorder.checkpoints import load, readers
from recorder.checkpoints.detect import CheckpointInfo
from recorder.checkpoints.formats import FormatPlugin, RecordedFormat, declared_format, declared_reader
from recorder.provenance import provenance
from recorder.rules import BENCHMARK, RULESET
from recorder.store.kinds import RunOpened

GBS = 256  # validation start 18
STEPS = (18, 19)
T0_NS = 1_780_000_000_000_000_000
SAVE = re.compile(r"save_(\d+)")
TENSORS = "tensors.st"


def _detect(path: Path) -> CheckpointInfo | None:
    if not ((path / TENSORS).is_file() and (path / "config.json").is_file()):
        return None
    return CheckpointInfo(
        path=path,
        format=declared_reader("st-dir"),
        step=None,
        world_size=None,
        source_run=None,
        config=json.loads((path / "config.json").read_text()),
        tokenizer_dir=path,
        weights_dir=path,
        config_file=path / "config.json",
    )


READER = readers.Reader(
    name=declared_reader("st-dir"),
    expects=f"{TENSORS} with config.json",
    detect=_detect,
    shard_files=lambda info: [info.weights_dir / TENSORS],
    read=load.read_safetensors,
    sharded=True,  # the import records the manifest of what loading hashed, as verify checks it
)


def _claims(root: Path) -> bool:
    return root.is_dir() and any(SAVE.fullmatch(p.name) and (p / "save.json").is_file() for p in root.iterdir())


def _commit(path: Path, request: ImportRequest) -> SeriesCommit:
    save = json.loads((path / "save.json").read_text())
    record, manifest = request.fingerprinter()(path)
    assert manifest is not None
    loaded = loaded_files(manifest)
    return SeriesCommit(
        step=save["step"],
        samples=save["samples"],
        path=path,
        weight_update_ns=save["time_ns"],
        save_end_ns=max(f.stat().st_mtime_ns for f in path.iterdir()),
        sha256=loaded.manifest["root"],
        bytes=sum(s["bytes"] for s in loaded.manifest["shards"]),
        fingerprint=record,
        format=declared_format("saves"),
        dtype=None,
        source=None,
        manifest=loaded.manifest,
        files=loaded.files,
    )


def _import(root: Path, request: ImportRequest) -> SeriesImported:
    saves = sorted((p for p in root.iterdir() if SAVE.fullmatch(p.name)), key=lambda p: int(p.name[5:]))
    commits = [_commit(p, request) for p in saves]
    opened = RunOpened(
        benchmark=BENCHMARK,
        ruleset=RULESET,
        division=None,
        global_batch_size=GBS,
        config={"layout": "saves"},
        provenance=provenance(),
        resumed_from=None,
    )
    run, kinds = write_series(request.into, REGISTERED_WRITER, opened, commits)
    return SeriesImported(
        run=run,
        global_batch_size=GBS,
        columns=(*COLUMNS, "path"),
        rows=[(str(c.step), str(c.samples), utc_ns(c.weight_update_ns), str(c.path)) for c in commits],
        problems=step_problems([(c.step, c.samples) for c in commits], GBS, "were they deleted?"),
        warnings=[],
        evaluated="eval_result" in kinds,
    )


IMPORTER = SeriesImporter(name="saves", claims=_claims, run=_import)

PLUGIN = FormatPlugin(
    name="saves",
    recorded=(
        RecordedFormat(
            name=declared_format("saves"), reader=declared_reader("st-dir"), imported=True, files="imported-shards"
        ),
    ),
    reader=f"{__name__}:READER",
    importer=f"{__name__}:IMPORTER",
)
