"""NeMo-RL series as a cluster leaves them, made from the series the real megatron-core wrote
(tests/golden/mcore/): a leftover iteration folder beside a step's own, a last save that did not finish, a
training log that ends before the series, a Megatron-LM save directory, a base model's config that does not
describe the weights. Each is imported from what the writer recorded, or refused naming the file and the key;
never a silent choice. The commands run in this process (what they say and write is what is read)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from recorder.store.reader import read_run
from recorder.store.run import RunDir
from tests.evaluator import nemo_run
from tests.helpers import run_in_process
from tests.kit import mcore_golden
from tests.kit.mcore_golden import ITERATION
from tests.kit.sample_series import STEP_MS, WRITE_MS

TRACKER = "latest_checkpointed_iteration.txt"


def _source(kind: str = "dense-tp1") -> list[str]:
    return ["--model-config", str(mcore_golden.model_config(kind)), "--tokenizer", str(mcore_golden.tokenizer())]


def _series(tmp_path: Path, *, step_20: bool = False) -> Path:
    """The dense TP1 series (steps 18 and 19); with `step_20`, a step 20 saved as step 19's files, one step
    later (its weights are megatron-core's, its training_info.json the next step's)."""
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    if step_20:
        shutil.copytree(series / "step_19", series / "step_20")
        info_path = series / "step_20" / "training_info.json"
        info = json.loads(info_path.read_text())
        info |= {"current_step": 20, "consumed_samples": info["consumed_samples"] + 16}
        info["training_step_end_time_ms"] += STEP_MS
        info_path.write_text(json.dumps(info))
        written_ns = (info["training_step_end_time_ms"] + WRITE_MS) * 1_000_000
        for f in (series / "step_20").rglob("*"):
            if f.is_file():
                os.utime(f, ns=(written_ns, written_ns))
    return series


def _with_training_log(tmp_path: Path, final_step: int) -> Path:
    log = nemo_run.write_training_mllog(tmp_path / "mlperf_training.log", final_step=final_step)
    done = run_in_process("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "nemo")
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / "runs" / "nemo"


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _events(run: Path) -> list:  # type: ignore[type-arg]
    return list(read_run(RunDir.open(run)).events)


def _commits(run: Path) -> dict[int, dict]:  # type: ignore[type-arg]
    return {e.step: e.data for e in _events(run) if e.kind == "checkpoint_committed"}


def _leftover_iteration(series: Path) -> Path:
    """Step 19's weights renamed to its own iteration, and step 18's copied in beside them as iter_0000000."""
    weights = series / "step_19" / ITERATION.parent
    (weights / "iter_0000000").rename(weights / "iter_0000019")
    shutil.copytree(series / "step_18" / ITERATION, weights / "iter_0000000")
    return weights


def test_two_iteration_folders_and_no_record_of_which_is_refused_naming_both(tmp_path: Path) -> None:
    weights = _leftover_iteration(_series(tmp_path))
    into = tmp_path / "runs" / "nemo"
    done = run_in_process("import-checkpoints", str(tmp_path / "checkpoints"), "--into", str(into), *_source())
    assert done.returncode == 2, done.stdout + done.stderr
    errors = _errors(done.stderr)
    text = done.stderr.replace("\n", " ")
    assert len(errors) == 1 and str(weights) in text and "iter_0000000, iter_0000019" in text, done.stderr
    assert TRACKER in text and "Traceback" not in done.stderr
    assert not into.exists()


@pytest.mark.parametrize("record", ["tracker", pytest.param("training_info", marks=pytest.mark.slow)])
def test_a_leftover_iteration_is_passed_over_for_the_one_the_writer_recorded(record: str, tmp_path: Path) -> None:
    series = _series(tmp_path)
    weights = _leftover_iteration(series)
    if record == "tracker":
        (weights / TRACKER).write_text("19\n")
    else:
        info = json.loads((series / "step_19" / "training_info.json").read_text())
        (series / "step_19" / "training_info.json").write_text(json.dumps(info | {"iteration": 19}))
    into = tmp_path / "runs" / "nemo"
    done = run_in_process("import-checkpoints", str(series), "--into", str(into), *_source())
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout.replace("\n", "")
    assert f"{weights / 'iter_0000000'}: left out of step 19 (never read)" in out, done.stdout
    commits = _commits(into)
    shards = [s["path"] for s in commits[19]["manifest"]["shards"]]
    assert shards and not [p for p in shards if p.startswith("iter_0000000/")], shards
    assert any(p.startswith("iter_0000019/") for p in shards), shards
    # scored from its own weights: the leftover is step 18's, whose fingerprint differs
    assert commits[19]["fingerprint"]["value"] != commits[18]["fingerprint"]["value"]


def test_a_tracker_naming_an_iteration_that_is_not_there_is_refused(tmp_path: Path) -> None:
    series = _series(tmp_path)
    weights = series / "step_19" / ITERATION.parent
    (weights / TRACKER).write_text("20")
    done = run_in_process("import-checkpoints", str(series), "--into", str(tmp_path / "runs" / "x"), *_source())
    assert done.returncode == 2, done.stdout + done.stderr
    text = done.stderr.replace("\n", " ")
    assert len(_errors(done.stderr)) == 1 and str(weights / TRACKER) in text and "iter_0000020" in text, text


def _unfinish(step: Path, how: str) -> Path:
    """Step `step` as a save that stopped part way: the file it never wrote, removed; that file's path."""
    gone = {
        "metadata": step / ITERATION / ".metadata",
        "training_info": step / "training_info.json",
        "shard": step / ITERATION / "__0_1.distcp",
    }[how]
    gone.unlink()
    return gone


@pytest.mark.parametrize(
    "how",
    ["metadata", pytest.param("training_info", marks=pytest.mark.slow), pytest.param("shard", marks=pytest.mark.slow)],
)
def test_an_unfinished_last_save_is_left_out_named_and_the_finished_steps_import(how: str, tmp_path: Path) -> None:
    series = _series(tmp_path, step_20=True)
    gone = _unfinish(series / "step_20", how)
    run = _with_training_log(tmp_path, final_step=19)  # training stopped while step 20 was being saved
    done = run_in_process("import-checkpoints", str(series), "--into", str(run), *_source())
    assert done.returncode == 1, done.stdout + done.stderr  # a step was left out
    assert "Traceback" not in done.stderr and not _errors(done.stderr), done.stderr
    left = [line for line in done.stdout.splitlines() if line.startswith("left out:")]
    assert len(left) == 1 and str(series / "step_20") in left[0], done.stdout
    assert str(gone) in done.stdout.replace("\n", ""), done.stdout
    assert sorted(_commits(run)) == [18, 19]
    stops = [e.step for e in _events(run) if e.kind == "block_stop"]
    assert stops == [19]


def test_a_series_past_the_training_logs_last_step_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    series = _series(tmp_path, step_20=True)
    run = _with_training_log(tmp_path, final_step=19)
    before = [e.digest for e in _events(run)]
    done = run_in_process("import-checkpoints", str(series), "--into", str(run), *_source())
    assert done.returncode == 2, done.stdout + done.stderr
    errors = _errors(done.stderr)
    text = done.stderr.replace("\n", " ")
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(series / "step_20" / "training_info.json") in text and "step 20" in text, text
    assert "ends at step 19 (its block_stop)" in text, text
    assert [e.digest for e in _events(run)] == before  # the block_stop recorded stays where it is


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        (
            "consumed_samples",
            300,
            "consumed 4800 samples, the training log's tracked_stats of step 19 says samples_count 4864",
        ),
        ("training_step_end_time_ms", nemo_run.update_ms(17), "not after the training log's step 18"),
    ],
)
def test_a_series_step_that_disagrees_with_the_training_log_is_refused_naming_the_key(
    key: str, value: int, said: str, tmp_path: Path
) -> None:
    series = _series(tmp_path)
    info_path = series / "step_19" / "training_info.json"
    info_path.write_text(json.dumps(json.loads(info_path.read_text()) | {key: value}))
    run = _with_training_log(tmp_path, final_step=19)
    done = run_in_process("import-checkpoints", str(series), "--into", str(run), *_source())
    assert done.returncode == 2, done.stdout + done.stderr
    text = done.stderr.replace("\n", " ")
    assert len(_errors(done.stderr)) == 1 and str(info_path) in text and said in text, text
    assert not _commits(run)


def test_a_megatron_lm_save_directory_is_named_as_one_with_or_without_a_global_batch_size(tmp_path: Path) -> None:
    root = tmp_path / "megatron-lm"
    shutil.copytree(mcore_golden.GOLDEN / "dense-tp1" / "step_18" / ITERATION, root / "iter_0000018")
    (root / TRACKER).write_text("18")
    for extra in ([], ["--global-batch-size", "256"]):
        done = run_in_process("import-checkpoints", str(root), "--into", str(tmp_path / "runs" / "x"), *extra)
        assert done.returncode == 2, done.stdout + done.stderr
        text = done.stderr.replace("\n", " ")
        assert len(_errors(done.stderr)) == 1 and "a Megatron-LM save directory" in text, text
        assert "gives its global batch size in config.yaml" not in text


@pytest.mark.slow  # loads a step (about a minute on a shared CPU)
def test_a_model_config_that_does_not_describe_the_weights_blames_its_own_file_and_names_the_tensors(
    tmp_path: Path,
) -> None:
    series = mcore_golden.copy_series("moe", tmp_path / "checkpoints")
    dense = mcore_golden.model_config("dense-tp1")
    done = run_in_process(
        "import-checkpoints", str(series), "--into", str(tmp_path / "runs" / "x"), *_source("dense-tp1")
    )
    assert done.returncode == 2, done.stdout + done.stderr
    text = done.stderr.replace("\n", " ")
    assert len(_errors(done.stderr)) == 1 and f"{dense / 'config.json'} implies" in text, text
    assert "tensors with no counterpart in the model it builds:" in text and "mlp.shared_expert.*" in text, text
    assert str(series / "step_18" / "config.json") not in text


def test_strict_refuses_a_series_that_breaks_the_rule_and_writes_nothing(tmp_path: Path) -> None:
    series = _series(tmp_path)
    shutil.rmtree(series / "step_18")  # the series starts after the validation start
    run = _with_training_log(tmp_path, final_step=19)
    before = [e.digest for e in _events(run)]
    for into in (run, tmp_path / "runs" / "new"):
        done = run_in_process("import-checkpoints", str(series), "--into", str(into), "--strict", *_source())
        assert done.returncode == 1, done.stdout + done.stderr
        text = done.stderr.replace("\n", " ")
        assert len(_errors(done.stderr)) == 1 and "starts at step 19, not at the validation start 18" in text, text
        assert "nothing written" in text and "Traceback" not in done.stderr
    assert [e.digest for e in _events(run)] == before
    assert not (tmp_path / "runs" / "new").exists()
