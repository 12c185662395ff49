"""Inputs that once hung a command or took its memory, each built from an honest layout by the project's own
builders and then damaged: each is refused with one `error:` line naming the file, exit 2, nothing written.
(bench/hostile_inputs.py measures each refusal's time and memory; no test asserts either.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.kit.hostile_inputs import (
    deep_config_yaml,
    deep_tree_collect,
    deep_tree_import,
    fifo_dcp_shard,
    fifo_event_file,
    fifo_mcore_weight,
    fifo_pins,
    flow_list_config_yaml,
    query_list_bomb,
    remove_tree,
    sparse_final_meta,
    symlink_loop_mcore,
)

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def _refused(tmp_path: Path, args: list[str], *words: str) -> str:
    done = run_cli(*args, timeout=300)  # a hang fails here, after the timeout, instead of blocking the suite
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    text = " ".join(done.stderr.split())
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert all(w in text for w in words), text
    assert not (tmp_path / "runs" / "r").exists()
    return text


def _step_left_out(tmp_path: Path, args: list[str], *words: str) -> str:
    """A NeMo-RL step holding what is not a plain file is left out for that step only, on one `left out:` line
    naming it; the other steps are imported, and the series then misses its validation start (exit 1)."""
    done = run_cli(*args, timeout=300)
    text = " ".join(done.stdout.split() + done.stderr.split())
    left = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("left out:")]
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert len(left) == 1 and "step_18" in left[0] and "starts at step 19" in text, left
    assert all(w in text for w in words), text
    return text


def test_a_fifo_among_dcp_shards_is_named_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "job" / "snapshots" / "step_18" / "__9_0.distcp"
    _refused(tmp_path, fifo_dcp_shard(tmp_path), f"{fifo}: a FIFO, not a regular file")


def test_a_fifo_among_megatron_weights_is_named_not_skipped(tmp_path: Path) -> None:
    fifo = tmp_path / "checkpoints" / "step_18" / "policy" / "weights" / "iter_0000000" / "__9_0.distcp"
    _step_left_out(tmp_path, fifo_mcore_weight(tmp_path), f"{fifo}: a FIFO, not a regular file")


def test_a_symlink_loop_among_megatron_weights_is_named(tmp_path: Path) -> None:
    weights = tmp_path / "checkpoints" / "step_18" / "policy" / "weights" / "iter_0000000"
    _step_left_out(tmp_path, symlink_loop_mcore(tmp_path), f"{weights}/", "a symlink, not a regular file")


def test_a_sparse_giant_final_meta_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    meta = tmp_path / "archives" / "fsdp2_epoch_1" / "final_meta.json"
    _refused(tmp_path, sparse_final_meta(tmp_path), f"{meta}: 2,147,483,649 bytes, larger than a JSON file may be")


def test_a_config_yaml_nested_a_million_deep_is_an_input_error(tmp_path: Path) -> None:
    config = tmp_path / "checkpoints" / "step_18" / "config.yaml"
    _refused(tmp_path, deep_config_yaml(tmp_path), f"{config}: line 1: YAML nested more than 100 deep")


def test_a_query_building_one_huge_value_is_stopped_by_its_memory_limit(tmp_path: Path) -> None:
    args = query_list_bomb(tmp_path)
    args[args.index("--timeout") + 1] = "0"  # no time limit: the memory limit alone must stop it
    _refused(tmp_path, args, "past its limit of 244 MiB (--memory-limit)")  # 256 MB, the command's own memory


def test_a_checkpoint_nested_1500_folders_deep_is_left_out_by_import_naming_the_folder(tmp_path: Path) -> None:
    step = tmp_path / "checkpoints" / "step_18"
    _step_left_out(tmp_path, deep_tree_import(tmp_path), f"{step}/d/d/d/", "folders nested more than 128 deep")
    remove_tree(step)  # pytest's own clean-up recurses per folder


def test_a_checkpoint_nested_1500_folders_deep_is_refused_by_collect_naming_the_folder(tmp_path: Path) -> None:
    step = tmp_path / "checkpoints" / "step_18"
    _refused(tmp_path, deep_tree_collect(tmp_path), f"{step}/d/d/d/", "folders nested more than 128 deep")
    remove_tree(step)


@pytest.mark.parametrize("spelling", ["256M", "256 megabytes"])
def test_a_memory_limit_in_any_spelling_duckdb_reads_is_the_commands_watch(tmp_path: Path, spelling: str) -> None:
    args = query_list_bomb(tmp_path)
    args[args.index("--memory-limit") + 1] = spelling
    args[args.index("--timeout") + 1] = "0"  # the watch alone must stop it: these spellings once switched it off
    _refused(tmp_path, args, "past its limit of 244 MiB (--memory-limit)")


@pytest.mark.parametrize("spelling", ["-1", "none", "50%", "1e3MB", "256"])
def test_a_memory_limit_that_is_no_size_is_refused_before_any_query(tmp_path: Path, spelling: str) -> None:
    args = query_list_bomb(tmp_path)
    args[args.index("--memory-limit") + 1] = spelling
    _refused(tmp_path, args, f"--memory-limit {spelling}: not a size this command can hold a query to")


def test_a_config_yaml_of_flow_lists_is_refused_by_its_node_count(tmp_path: Path) -> None:
    # 2 MiB here (a million nodes); bench/hostile_inputs.py measures the 16 MiB the byte cap allows
    config = tmp_path / "checkpoints" / "step_18" / "config.yaml"
    args = flow_list_config_yaml(tmp_path, size=2 * 2**20)
    _refused(tmp_path, args, f"{config}: line ", "YAML of more than 20,000 nodes, more than a config holds")


def test_a_fifo_named_like_an_event_file_is_refused_by_zero_shot(tmp_path: Path) -> None:
    run = tmp_path / "team" / "checkpoints" / "tiny" / "run1"
    _refused(tmp_path, fifo_event_file(tmp_path), f"{run}/events.out.tfevents.", "a FIFO, not a regular file")


def test_task_pins_naming_a_fifo_are_refused_by_collect(tmp_path: Path) -> None:
    import subprocess

    from tests.helpers import RECORDER

    command = fifo_pins(tmp_path)  # env RECORDER_TASK_PINS=PATH collect OUT
    name, value = command[1].split("=", 1)
    done = subprocess.run(
        [RECORDER, *command[2:]], capture_output=True, text=True, timeout=300, env={**os.environ, name: value}
    )
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert f"{tmp_path / 'pins'}: a FIFO, not a regular file" in errors[0], errors
