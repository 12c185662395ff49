"""What an import of a checkpoint series commits is what loading reads, built from honest series: shard files
no `.metadata` names are left out of the manifest and named; links between steps or from outside the series
leave a NeMo-RL step out naming the link, and an archive linked in from outside is refused naming it; a
NeMo-RL step's config.yaml and the base model's config.json it leads to are
hashed into the commit, so one swapped after the import is ALTERED (commit-files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from recorder.checkpoints.manifest import Manifest
from recorder.checkpoints.readers import detect, hash_shards
from recorder.store.reader import read_run
from recorder.verify import verify_run
from tests.adoption import nemo_layout
from tests.checkpoints.test_dcp_import import GBS, write_archives, write_snapshots
from tests.cli.shell import run_main
from tests.evaluator import nemo_run
from tests.helpers import run_cli
from tests.kit import mcore_golden

STRAYS = 40


def _mcore(where: Path) -> Path:
    """A NeMo-RL series of steps 18 and 19 whose weights megatron-core wrote."""
    series = where / "checkpoints"
    for step in (18, 19):
        nemo_layout.write_checkpoint(series, step, nemo_run.update_ms(step))
    return series


def _commits(run: Path) -> dict[int, Any]:
    return {e.step: e.data for e in read_run(run).events if e.kind == "checkpoint_committed"}


def _import(series: Path, run: Path, *extra: str) -> Any:
    """The import in this process through the CLI's entry point (what it commits and says is what is read)."""
    done = run_main("import-checkpoints", str(series), "--into", str(run), *extra)
    assert done.code == 0, done.out + done.err
    return done


def _add_strays(weights: Path) -> list[str]:
    """A copy of a real shard under a rank's name no `.metadata` names, and junk beside it."""
    shard = sorted(weights.glob("*.distcp"))[0]
    names = ["__7_0.distcp", *(f"__{100 + i}_0.distcp" for i in range(STRAYS - 1))]
    shutil.copy(shard, weights / names[0])
    for name in names[1:]:
        (weights / name).write_bytes(b"not a shard")
    return names


def _series(tmp_path: Path, layout: str) -> tuple[Path, Path, Path, tuple[str, ...]]:
    """(the series, step 18's directory, the folder of its shards, the import's extra options)."""
    if layout == "mcore":
        series = _mcore(tmp_path)
        return series, series / "step_18", series / "step_18/policy/weights/iter_0000000", ()
    series = write_snapshots(tmp_path / "job")
    step = series / "snapshots" / "step_18"
    return series, step, step, ("--global-batch-size", str(GBS))


@pytest.mark.parametrize("layout", ["dcp-snapshot", pytest.param("mcore", marks=pytest.mark.slow)])
def test_shard_files_no_metadata_names_are_left_out_of_the_manifest_and_named(tmp_path: Path, layout: str) -> None:
    series, step_dir, weights, extra = _series(tmp_path, layout)
    _import(series, tmp_path / "runs" / "honest", *extra)
    honest = _commits(tmp_path / "runs" / "honest")[18]
    strays = _add_strays(weights)
    run = tmp_path / "runs" / "r"

    done = _import(series, run, *extra)

    commit = _commits(run)[18]
    assert commit["manifest"] == honest["manifest"]  # the same shards, the same root
    assert commit["weight_update_ns"] == honest["weight_update_ns"]  # a later stray does not date the save
    warnings = [line for line in done.out.splitlines() if line.startswith("warning:")]
    text = " ".join(done.out.split())
    assert len(warnings) == 1 and f"{step_dir}: {STRAYS} shard files" in text, done.out
    assert f"{sorted(strays)[0]}, " in text and f"and {STRAYS - 3} more" in text, done.out
    assert verify_run(run).ok
    # what eval does before loading: the shards listed and hashed against the commit; the strays are no shards
    assert hash_shards(detect(step_dir), Manifest.from_dict(commit["manifest"])).root == commit["sha256"]


def test_copy_tools_temporary_files_are_left_out_of_the_manifest_and_named(tmp_path: Path) -> None:
    series = _mcore(tmp_path)
    _import(series, tmp_path / "runs" / "honest")
    honest = _commits(tmp_path / "runs" / "honest")[18]
    folder = series / "step_18" / "policy" / "weights" / "iter_0000000"
    temps = [".__0_0.distcp.Xy12Ab", "common.pt.partial", "metadata.json.tmp"]  # rsync's, and two others
    for name in temps:
        shutil.copy(folder / "__0_0.distcp", folder / name)
    run = tmp_path / "runs" / "r"

    done = _import(series, run)

    commit = _commits(run)[18]
    assert commit["manifest"] == honest["manifest"]  # nothing of them hashed
    warnings = [line for line in done.out.splitlines() if line.startswith("warning:")]
    text = " ".join(done.out.split())
    assert len(warnings) == 1 and "3 copy tool's temporary files" in text, done.out
    assert all(f"iter_0000000/{name}" in text for name in temps), done.out
    assert verify_run(run).ok


def test_a_steps_weights_linked_to_another_steps_leave_that_step_out_naming_the_link(tmp_path: Path) -> None:
    series = _mcore(tmp_path)
    weights = series / "step_19" / "policy" / "weights"
    shutil.rmtree(weights)
    weights.symlink_to(series / "step_18" / "policy" / "weights")  # one step's weights committed twice
    run = tmp_path / "runs" / "r"
    done = run_cli("import-checkpoints", str(series), "--into", str(run), timeout=600)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    left = [line for line in done.stdout.splitlines() if line.startswith("left out:")]
    text = " ".join(done.stdout.split())
    assert len(left) == 1 and f"{weights}: a symlink" in text and "cp -rL" in text, done.stdout
    assert sorted(_commits(run)) == [18]


def test_an_archive_linked_in_from_outside_the_series_is_refused_naming_it(tmp_path: Path) -> None:
    series = write_archives(tmp_path / "archives", tmp_path / "job")
    archive = sorted(series.glob("fsdp2_epoch_*"))[-1]
    outside = tmp_path / "elsewhere" / archive.name
    outside.parent.mkdir()
    archive.rename(outside)
    archive.symlink_to(outside)
    _refused(tmp_path, series, ("--global-batch-size", str(GBS)), f"{archive}: a symlink")


def _refused(tmp_path: Path, series: Path, extra: tuple[str, ...], *words: str) -> None:
    run = tmp_path / "runs" / "r"
    done = run_cli("import-checkpoints", str(series), "--into", str(run), *extra, timeout=600)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    text = " ".join(done.stderr.split())
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert all(w in text for w in words), text
    assert not run.exists()


@pytest.mark.parametrize("swapped", ["config.yaml", "config.json"])
def test_a_nemo_steps_config_swapped_after_import_is_altered(tmp_path: Path, swapped: str) -> None:
    series = _mcore(tmp_path)
    base = shutil.copytree(mcore_golden.model_config(nemo_layout.SERIES), tmp_path / "base-config")
    run = tmp_path / "runs" / "r"
    _import(series, run, "--model-config", str(base))
    files = _commits(run)[18]["files"]
    assert "config.yaml" in files and any(Path(name).name == "config.json" for name in files), files
    assert verify_run(run).ok
    if swapped == "config.yaml":  # another base model's name: another config and tokenizer would be loaded
        path = series / "step_18" / "config.yaml"
        path.write_text(path.read_text() + "# swapped\n")
    else:
        [name] = [n for n in files if Path(n).name == "config.json"]
        path = (series / "step_18" / name).resolve()
        assert path == base / "config.json"  # the copy, never the golden file
        doc = json.loads(path.read_text())
        path.write_text(json.dumps(doc | {"swapped": True}))
    problems = [p for p in verify_run(run).problems if p.rule == "commit-files"]
    assert problems and all(swapped in p.message for p in problems), problems
