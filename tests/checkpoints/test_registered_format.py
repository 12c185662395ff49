"""A checkpoint format added as one plugin (tests/checkpoints/saves_format.py, laid out as a shipped format's
module: a series of `save_N/` folders the real safetensors library wrote, a name no shipped reader reads).
Registered, `recorder import-checkpoints`, `recorder eval` and `recorder verify`, run through the real command
line in this process, import, score and verify the series (the tiny random model passes no target, so eval
ends with exit 1, the data's no, having scored every step). Files the format takes: its module and the line
that registers its plugin (here this test); a team's installed package registers it through its entry point
in every process. Shipped, it is three product files (saves_format.py's docstring says which)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from safetensors.torch import save_file

from recorder.adapters.series_importers import SeriesImporter
from recorder.checkpoints import formats as checkpoint_formats
from recorder.checkpoints.formats import declared_format
from recorder.checkpoints.readers import Reader
from recorder.cli import run_command_line
from recorder.errors import RecorderError
from recorder.plugin_registry import resolve
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from tests.checkpoints import saves_format
from tests.checkpoints.saves_format import GBS, PLUGIN, STEPS, T0_NS, TENSORS
from tests.checkpoints.test_dcp_import import _spec
from tests.helpers import RECORDER, REPO
from tests.kit import sample_series


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


def _exit_status(*args: str) -> int:
    """`recorder ARGS` run in this process (where the rows are registered), its error mapped to its exit
    status as the command line's main() maps it."""
    try:
        return run_command_line(list(args))
    except RecorderError as e:
        return e.exit_code


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The format's plugin registered, the table as it was once the test ends."""
    monkeypatch.setattr(checkpoint_formats, "PLUGINS", checkpoint_formats.PLUGINS.copy())
    checkpoint_formats.PLUGINS.register(PLUGIN)


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


def test_a_name_already_in_the_table_is_refused(registered: None) -> None:
    with pytest.raises(ValueError, match="checkpoint format saves: already in the table"):
        checkpoint_formats.PLUGINS.register(PLUGIN)
    # a plugin of another name that records a name the table holds: refused too, the table unchanged
    clash = replace(PLUGIN, name="saves-2", recorded=(replace(PLUGIN.recorded[0], name=declared_format("torch-dcp")),))
    with pytest.raises(ValueError, match="checkpoint format torch-dcp: already in the table"):
        checkpoint_formats.PLUGINS.register(clash)
    assert checkpoint_formats.PLUGINS.find("saves-2") is None
    assert checkpoint_formats.recorded_format("torch-dcp").files == "shards"


def test_the_format_is_one_module_and_its_plugin() -> None:
    """Its reader (detection and loading), its importer and its recorded row are one object's, and every
    function they call in is the module's: nothing else of the product changes for it."""
    reader, importer = (resolve(target, kind, "saves") for target, kind in ((PLUGIN.reader, Reader), (PLUGIN.importer, SeriesImporter)))  # fmt: skip
    functions = (reader.detect, reader.shard_files, importer.claims, importer.run)
    assert {inspect.getsourcefile(f) for f in functions} == {saves_format.__file__}
    assert (reader, importer) == (saves_format.READER, saves_format.IMPORTER)
    assert [f.name for f in PLUGIN.recorded] == ["saves"]


def test_an_installed_package_s_entry_point_adds_the_format_to_a_fresh_process(
    tmp_path: Path, registered: None
) -> None:
    """A run that records the format is verified by a fresh `recorder` process when a package's entry point
    registers the plugin (a dist-info with entry_points.txt on the path, as pip installs it); without it,
    verify fails naming the format its commits record."""
    for step in STEPS:
        write_save(tmp_path / "saves", step)
    run = tmp_path / "runs" / "saves"
    assert _exit_status("import-checkpoints", str(tmp_path / "saves"), "--into", str(run)) == 0
    site = tmp_path / "site"
    info = site / "saves_format-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: saves-format\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[recorder.checkpoints.formats]\nsaves = {saves_format.__name__}:PLUGIN\n")
    path = os.pathsep.join([str(site), str(REPO)])  # the plugin's module is this project's tests'
    installed = _fresh("verify", str(run), pythonpath=path)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    bare = _fresh("verify", str(run), pythonpath=str(REPO))  # its commits name a format no plugin has
    assert bare.returncode == 1 and "'saves'" in bare.stdout and "[rule payload]" in bare.stdout, bare.stdout


def _fresh(*args: str, pythonpath: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    return subprocess.run([RECORDER, *args], capture_output=True, text=True, env=env, timeout=600)
