"""A checkpoint format the project does not ship is added from one file, this one: a series of `save_N/`
folders, each the model's tensors in `tensors.st` (written by the real safetensors library, a name no shipped
reader reads), its config.json and tokenizer, and a `save.json` giving the step, the samples and the time of
the weight update. The file registers its three rows through the documented hooks
(`recorder.checkpoint_formats.register_format`, `trainer.policy.checkpoints.readers.register_reader`,
`recorder.adapters.series_importers.register_importer`), and `recorder import-checkpoints`, `recorder eval` and
`recorder verify`, run through the real command line in this process, import, score and verify the series
(the tiny random model passes no target, so eval ends with exit 1, the data's no, having scored every step).

Files a new format takes: 1 through the hooks (this one: its layout, reader and importer with their rows).
A format shipped with the project takes its rows in the three tables (recorder/checkpoint_formats.py,
trainer/policy/checkpoints/readers.py, recorder/adapters/series_importers.py) and the module with its
importer's functions beside them: no other product file changes (tests/layout/test_format_rows.py)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from safetensors.torch import save_file

from recorder import checkpoint_formats
from recorder.adapters import series_importers
from recorder.adapters.series_import import SeriesCommit, loaded_files, step_problems, write_series
from recorder.adapters.series_importers import ImportRequest, SeriesImported, SeriesImporter
from recorder.checkpoint_formats import RecordedFormat
from recorder.cli import run_command_line
from recorder.errors import RecorderError
from recorder.kinds import RunOpened
from recorder.provenance import provenance
from recorder.reader import read_run
from recorder.rules import BENCHMARK, RULESET
from recorder.run import RunDir
from tests.checkpoints.test_dcp_import import _spec
from tests.kit import sample_series
from trainer.policy.checkpoints import load, readers
from trainer.policy.checkpoints.detect import CheckpointInfo

GBS = 256  # validation start 18
STEPS = (18, 19)
T0_NS = 1_780_000_000_000_000_000
SAVE = re.compile(r"save_(\d+)")
TENSORS = "tensors.st"


def write_save(root: Path, step: int) -> Path:
    """`root/save_N/` for `step`: a tiny Llama's tensors, its config and tokenizer, and save.json."""
    tok = sample_series.tokenizer()
    model = sample_series.model(len(tok), step, hidden_size=16, nudge=0.5)
    path = root / f"save_{step}"
    path.mkdir(parents=True)
    save_file({k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}, path / TENSORS)
    model.config.to_json_file(path / "config.json")
    tok.save_pretrained(path)
    (path / "save.json").write_text(json.dumps({"step": step, "samples": step * GBS, "time_ns": T0_NS + step}))
    for f in path.iterdir():
        os.utime(f, ns=(T0_NS + step + 1, T0_NS + step + 1))
    return path


def _detect(path: Path) -> CheckpointInfo | None:
    if not ((path / TENSORS).is_file() and (path / "config.json").is_file()):
        return None
    return CheckpointInfo(
        path=path,
        format="st-dir",  # type: ignore[arg-type]  # a registered reader's name: not in the shipped Literal
        step=None,
        world_size=None,
        source_run=None,
        config=json.loads((path / "config.json").read_text()),
        tokenizer_dir=path,
        weights_dir=path,
        config_file=path / "config.json",
    )


READER = readers.Reader(
    name="st-dir",  # type: ignore[arg-type]
    expects=f"{TENSORS} with config.json",
    detect=_detect,
    shard_files=lambda info: [info.weights_dir / TENSORS],
    read=load.read_safetensors,
    sharded=True,  # the import records the manifest of what loading hashed, as verify checks it
)
ROW = RecordedFormat(name="saves", reader="st-dir", imported=True, files="imported-shards")  # type: ignore[arg-type]


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
        format="saves",  # type: ignore[arg-type]
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
    run, kinds = write_series(request.into, series_importers.REGISTERED_WRITER, opened, commits)
    return SeriesImported(
        run=run,
        global_batch_size=GBS,
        columns=(*series_importers.COLUMNS, "path"),
        rows=[(str(c.step), str(c.samples), series_importers.utc_ns(c.weight_update_ns), str(c.path)) for c in commits],
        problems=step_problems([(c.step, c.samples) for c in commits], GBS, "were they deleted?"),
        warnings=[],
        evaluated="eval_result" in kinds,
    )


IMPORTER = SeriesImporter(name="saves", claims=_claims, run=_import)


def _exit_status(*args: str) -> int:
    """`recorder ARGS` run in this process (where the rows are registered), its error mapped to its exit
    status as the command line's main() maps it."""
    try:
        return run_command_line(list(args))
    except RecorderError as e:
        return e.exit_code


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three rows registered through the hooks, the tables as they were once the test ends."""
    monkeypatch.setattr(checkpoint_formats, "FORMATS", checkpoint_formats.FORMATS)
    monkeypatch.setattr(readers, "READERS", readers.READERS)
    monkeypatch.setattr(series_importers, "IMPORTERS", series_importers.IMPORTERS)
    checkpoint_formats.register_format(ROW)
    readers.register_reader(READER)
    series_importers.register_importer(IMPORTER)


def test_a_registered_format_is_imported_evaluated_and_verified(tmp_path: Path, registered: None) -> None:
    for step in STEPS:
        write_save(tmp_path / "saves", step)
    run, spec = tmp_path / "runs" / "saves", _spec(tmp_path / "spec")
    assert _exit_status("import-checkpoints", str(tmp_path / "saves"), "--into", str(run)) == 0
    assert _exit_status("verify", str(run)) == 0
    # both steps scored; the tiny random model passes no target: exit 1, the data's no
    assert _exit_status("eval", str(run), "--task", str(spec), "--all") == 1
    assert _exit_status("verify", str(run)) == 0
    events = read_run(RunDir.open(run)).events
    commits = [e for e in events if e.kind == "checkpoint_committed"]
    assert [(e.step, e.data["format"]) for e in commits] == [(18, "saves"), (19, "saves")]
    assert [s["path"] for s in commits[0].data["manifest"]["shards"]] == [TENSORS]
    assert sorted(e.step for e in events if e.kind == "eval_result") == list(STEPS)
    # the row says verify checks the imported shards where they lie: a changed byte is named
    shard = tmp_path / "saves" / "save_19" / TENSORS
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    assert _exit_status("verify", str(run)) == 1


def test_the_rows_are_what_makes_the_format(tmp_path: Path) -> None:
    """Unregistered, the same series is no series the command imports, and its name no format events hold."""
    for step in STEPS:
        write_save(tmp_path / "saves", step)
    with pytest.raises(RecorderError, match="no step_N checkpoint directories") as refused:
        run_command_line(["import-checkpoints", str(tmp_path / "saves"), "--into", str(tmp_path / "run")])
    assert refused.value.exit_code == 2 and not (tmp_path / "run").exists()
    with pytest.raises(KeyError, match="saves"):
        checkpoint_formats.recorded_format("saves")


def test_a_name_already_in_a_table_is_refused(registered: None) -> None:
    with pytest.raises(ValueError, match="already in the table"):
        checkpoint_formats.register_format(ROW)
    with pytest.raises(ValueError, match="already in the table"):
        readers.register_reader(READER)
    with pytest.raises(ValueError, match="already in the table"):
        series_importers.register_importer(IMPORTER)
