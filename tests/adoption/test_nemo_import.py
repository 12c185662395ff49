"""`recorder import-checkpoints`: a NeMo-RL deferred-evaluation series becomes weight updates and commits."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from recorder.adapters.nemo import (
    AlreadyImportedError,
    CheckpointLayoutError,
    NoCheckpointsError,
    import_checkpoints,
)
from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter
from recorder.rules import validation_start_step as validation_start
from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.store.run_files import tree_digest
from recorder.verify import verify_run
from tests.adoption import nemo_layout
from tests.helpers import run_in_process
from tests.kit.synthetic import write_evidence

MS = 1_000_000
FINGERPRINT = checkpoint_fingerprinter(None)  # what `recorder import-checkpoints` passes without --task
T0_MS = 1_780_000_000_000
# The worked example of docs/design.md: weight updates at 1080, 1142, 1204 s after run_start.
UPDATES_MS = {18: T0_MS + 1_080_000, 19: T0_MS + 1_142_000, 20: T0_MS + 1_204_000}


def _series(root: Path, steps: dict[int, int] = UPDATES_MS) -> Path:
    for step, ms in steps.items():
        nemo_layout.write_checkpoint(root, step, ms)
    (root / "tmp_step_21" / "policy" / "weights").mkdir(parents=True)  # an unfinished save: never imported
    return root


def _kinds(run: Path, kind: str) -> list:
    return [e for e in read_run(run).events if e.kind == kind]


def test_series_becomes_weight_updates_and_commits(tmp_path: Path) -> None:
    root = _series(tmp_path / "ckpt")
    report = import_checkpoints(root, tmp_path / "runs" / "nemo", fingerprint=FINGERPRINT)
    assert report.problems == [] and report.global_batch_size == 256

    run = tmp_path / "runs" / "nemo"
    updates = _kinds(run, "weight_update")
    assert [(e.step, e.samples_count, e.time_ns) for e in updates] == [
        (s, s * 256, ms * MS) for s, ms in UPDATES_MS.items()
    ]  # prompts x 16 generations
    commits = _kinds(run, "checkpoint_committed")
    assert [e.step for e in commits] == [18, 19, 20]
    c19 = commits[1].data
    assert c19["weight_update_ns"] == UPDATES_MS[19] * MS
    assert (run / c19["path"]).resolve() == (root / "step_19").resolve()
    assert (c19["sha256"], c19["bytes"]) == tree_digest(root / "step_19" / "policy" / "weights")
    assert (c19["blocked_ns"], c19["source"], c19["dtype"]) == (None, "nemo-rl", "bfloat16")
    # the Megatron weights load (recorder.checkpoints), so they are fingerprinted like Hugging Face ones
    assert (c19["fingerprint"]["texts"], c19["fingerprint"]["dtype"]) == ("fixed", "fp32")
    assert c19["manifest"]["root"] == c19["sha256"]
    assert commits[1].time_ns == c19["save_end_ns"] == (UPDATES_MS[19] + nemo_layout.WRITE_MS) * MS  # file mtimes
    (opened,) = _kinds(run, "run_opened")
    assert (opened.data["benchmark"], opened.data["global_batch_size"]) == ("qwen35_397b_grpo", 256)
    (stop,) = _kinds(run, "train_stop")
    assert (stop.step, stop.data["status"]) == (20, "completed")
    assert verify_run(run).ok


def test_tree_digest_changes_with_any_weight_byte(tmp_path: Path) -> None:
    path = nemo_layout.write_checkpoint(tmp_path, 18, T0_MS)
    before = tree_digest(path / "policy" / "weights")
    shard = path / "policy" / "weights" / "iter_0000000" / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[100] ^= 1
    shard.write_bytes(bytes(data))
    after = tree_digest(path / "policy" / "weights")
    assert after[1] == before[1] and after[0] != before[0]


def test_validation_start_is_exact() -> None:
    assert [validation_start(g) for g in (256, 512, 1024, 3840)] == [18, 10, 7, 4]


@pytest.mark.slow  # the default tier keeps the series import with evaluations and its replay
def test_gaps_and_a_late_start_are_reported(tmp_path: Path) -> None:
    # keep_top_k pruned step 19 and the first one (18) is gone too.
    root = _series(tmp_path / "ckpt", {19: UPDATES_MS[19], 21: UPDATES_MS[20] + 60_000, 22: UPDATES_MS[20] + 120_000})
    report = import_checkpoints(root, tmp_path / "run", fingerprint=FINGERPRINT)
    assert report.problems == [
        "the series starts at step 19, not at the validation start 18 (GBS 256)",
        "missing checkpoints for steps 20 (was keep_top_k pruning them?)",
    ]
    done = run_in_process("import-checkpoints", str(root), "--into", str(tmp_path / "run2"), "--strict")
    assert done.returncode == 1
    assert "missing checkpoints for steps 20" in done.stderr and "nothing written" in done.stderr
    assert not (tmp_path / "run2").exists()


def test_bad_layouts_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(NoCheckpointsError, match="no step_N"):
        import_checkpoints(tmp_path, tmp_path / "run", fingerprint=FINGERPRINT)
    path = nemo_layout.write_checkpoint(tmp_path / "a", 18, T0_MS)
    (path / "training_info.json").write_text(
        json.dumps({"current_step": 17, "consumed_samples": 288, "training_step_end_time_ms": T0_MS})
    )
    with pytest.raises(CheckpointLayoutError, match=r"training_info.json: current_step 17 differs"):
        import_checkpoints(tmp_path / "a", tmp_path / "run", fingerprint=FINGERPRINT)
    path = nemo_layout.write_checkpoint(tmp_path / "b", 18, T0_MS)
    shutil.rmtree(path / "policy")
    with pytest.raises(CheckpointLayoutError, match="MCore weights"):
        import_checkpoints(tmp_path / "b", tmp_path / "run", fingerprint=FINGERPRINT)
    assert not (tmp_path / "run").exists()  # nothing half-imported


@pytest.mark.slow  # the default tier keeps the series import with evaluations and its replay
def test_importing_twice_is_refused(tmp_path: Path) -> None:
    root = _series(tmp_path / "ckpt")
    import_checkpoints(root, tmp_path / "run", fingerprint=FINGERPRINT)
    with pytest.raises(AlreadyImportedError, match="steps 18, 19, 20 already have checkpoint commits"):
        import_checkpoints(root, tmp_path / "run", fingerprint=FINGERPRINT)
    done = run_in_process("import-checkpoints", str(root), "--into", str(tmp_path / "run"))
    assert done.returncode == 2 and "Traceback" not in done.stderr


def _write_training_mllog(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The training side's mllog as NeMo-RL writes it with deferred evaluation (plain mlperf_logging): init,
    configuration, run_start, a block closed at the final weight update, no run_stop (evaluation owns it)."""
    from mlperf_logging.mllog import mllog as reference

    now = {"ms": T0_MS - 10_000}
    monkeypatch.setattr(reference, "_current_time_ms", lambda: now["ms"])
    logger = logging.getLogger("test-nemo-training-mllog")
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(logging.FileHandler(path))
    log = reference.MLLogger(logger=logger)
    log.event(key="cache_clear", value=True)
    log.start(key="init_start")
    for key, value in (
        ("submission_benchmark", "qwen35_397b_grpo"),
        ("submission_division", "closed"),
        ("global_batch_size", 256),
        ("num_prompts_per_step", 16),
        ("num_generations_per_prompt", 16),
    ):
        log.event(key=key, value=value)
    now["ms"] = T0_MS
    log.end(key="init_stop")
    log.start(key="run_start")
    log.start(key="block_start", metadata={"samples_count": 0, "step": 0})
    for step in range(1, 21):  # a step's tracked_stats is logged once its weights are updated
        now["ms"] = UPDATES_MS.get(step, T0_MS + step * 60_000)
        log.event(key="tracked_stats", value={"reward": 0.5}, metadata={"samples_count": step * 256, "step": step})
    now["ms"] = UPDATES_MS[20] + 30_000
    log.end(key="block_stop", metadata={"samples_count": 20 * 256, "step": 20}, time_ms=UPDATES_MS[20])
    for handler in logger.handlers:
        handler.close()


def _append_nemo_evaluations(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NeMo-RL's deferred evaluator: step order, stop at the first pass (18 scores 0.65, 19 scores 0.72),
    run_stop with the passing checkpoint's training_step_end_time_ms."""
    from mlperf_logging.mllog import mllog as reference

    now = {"ms": T0_MS + 1_300_000}
    monkeypatch.setattr(reference, "_current_time_ms", lambda: now["ms"])
    logger = logging.getLogger("test-nemo-evaluator-mllog")
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(logging.FileHandler(path))
    log = reference.MLLogger(logger=logger)
    for step, accuracy in ((18, 0.65), (19, 0.72)):
        meta = {"samples_count": step * 256, "step": step}
        log.start(key="eval_start", metadata=meta)
        now["ms"] += 60_000
        log.event(key="eval_accuracy", value=accuracy, metadata={"samples_count": step * 256})
        log.end(key="eval_stop", metadata=meta)
    log.end(key="run_stop", metadata={"status": "success", "samples_count": 19 * 256}, time_ms=UPDATES_MS[19])
    for handler in logger.handlers:
        handler.close()


def _record_evaluations(run: RunDir) -> None:
    """An evaluator's results, order 19, 18, 20 (19 scores 0.72, 18 0.70, 20 0.71), 60 s each from 1300 s.

    Each names its step's commit and leaves its results file, as verify requires of any evaluator."""
    commits = {e.step: e.data for e in read_run(run).events if e.kind == "checkpoint_committed"}
    t = T0_MS + 1_300_000
    with LogWriter(run, "evaluator") as log:
        for step, accuracy in ((19, 0.72), (18, 0.70), (20, 0.71)):
            common = {"step": step, "samples_count": step * 256}
            commit = commits[step]
            log.append(
                "eval_start",
                **common,
                time_ns=t * MS,
                data={"checkpoint": commit["path"], "sha256": commit["sha256"], "worker": "nemo-rl"},
            )
            t += 60_000
            results, sha = write_evidence(run, log.run_id, step, accuracy, "nemo-rl")
            log.append(
                "eval_result",
                **common,
                key="accuracy",
                value=accuracy,
                time_ns=t * MS,
                data={"metric": "pass@4", "n": 251, "k": 4, "target": 0.69, "results": results, "results_sha256": sha},
            )
            log.append("eval_stop", **common, time_ns=t * MS)


def test_series_with_evaluations_holds_what_replay_needs(tmp_path: Path) -> None:
    root = _series(tmp_path / "ckpt")
    run = tmp_path / "runs" / "nemo"
    done = run_in_process("import-checkpoints", str(root), "--into", str(run))
    assert done.returncode == 0, done.stderr
    assert "3 checkpoints (GBS 256)" in done.stdout
    _record_evaluations(RunDir.open(run))
    assert verify_run(run).ok
    # The passing checkpoint's weight update is NeMo-RL's training_step_end_time_ms, not the time the
    # checkpoint or its evaluation was written.
    events = read_run(run).events
    first_pass = next(e for e in events if e.kind == "eval_result" and e.value > 0.69)
    update = next(e for e in events if e.kind == "weight_update" and e.step == first_pass.step)
    assert (first_pass.step, update.time_ns) == (19, UPDATES_MS[19] * MS)


def test_replay_derives_the_backdated_run_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole NeMo-RL path: its training mllog imported, its checkpoints imported, evaluations, replay."""
    mllog_file = tmp_path / "training.log"
    _write_training_mllog(mllog_file, monkeypatch)
    done = run_in_process("import", str(mllog_file), "--root", str(tmp_path / "runs"), "--run-id", "nemo")
    assert done.returncode == 0, done.stdout + done.stderr
    run = RunDir.open(tmp_path / "runs" / "nemo")
    done = run_in_process("import-checkpoints", str(_series(tmp_path / "ckpt")), "--into", str(run.path))
    assert done.returncode == 0, done.stdout + done.stderr
    _record_evaluations(run)
    assert verify_run(run).ok

    out = tmp_path / "official.log"
    done = run_in_process("replay", str(run.path), "--ruleset", "6.1.0", "--interpretation", "official", "-o", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(t.split(":::MLLOG ", 1)[1]) for t in out.read_text().splitlines() if ":::MLLOG" in t]
    run_stop = lines[-1]
    assert run_stop["key"] == "run_stop"
    assert (run_stop["time_ms"], run_stop["metadata"]["status"]) == (UPDATES_MS[19], "success")
    assert run_stop["metadata"]["samples_count"] == 19 * 256
    # include-final-save would read when the passing checkpoint was written: an imported series records no
    # save end, and its files' modification time (which a copy resets) is never a score
    done = run_in_process("replay", str(run.path), "--compare")
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = [line for line in done.stdout.splitlines() if "include-final-save" in line and "│" in line]
    assert "none" in row, done.stdout
    text = " ".join(done.stdout.split())
    assert "include-final-save cannot be judged: step 19's checkpoint was imported" in text, done.stdout


@pytest.mark.slow  # the default tier keeps the series import with evaluations and its replay
def test_nemo_evaluator_lines_in_the_mllog_are_scored_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NeMo-RL's own deferred evaluator appends eval lines and the backdated run_stop to the same mllog:
    importing that one file and the checkpoints lets every interpretation re-score it."""
    mllog_file = tmp_path / "mlperf.log"
    _write_training_mllog(mllog_file, monkeypatch)
    _append_nemo_evaluations(mllog_file, monkeypatch)
    assert run_in_process("import", str(mllog_file), "--root", str(tmp_path), "--run-id", "nemo").returncode == 0
    run = tmp_path / "nemo"
    assert run_in_process("import-checkpoints", str(_series(tmp_path / "ckpt")), "--into", str(run)).returncode == 0
    for interpretation, expected_ms in (("as-recorded", UPDATES_MS[19]), ("official", UPDATES_MS[19])):
        out = tmp_path / f"{interpretation}.log"
        done = run_in_process("replay", str(run), "-i", interpretation, "-o", str(out))
        assert done.returncode == 0, done.stdout + done.stderr
        last = json.loads(out.read_text().splitlines()[-1].split(":::MLLOG ", 1)[1])
        assert (last["key"], last["time_ms"]) == ("run_stop", expected_ms), interpretation


def test_global_batch_size_from_prompts_when_not_given_and_sample_mismatch_reported(tmp_path: Path) -> None:
    cfg = nemo_layout.config(prompts=32, generations=8)  # GBS 256 either way
    del cfg["policy"]["train_global_batch_size"]
    for step in (18, 19):
        # step 19 consumed one prompt too many: its samples are not step x GBS
        nemo_layout.write_checkpoint(tmp_path / "ckpt", step, UPDATES_MS[step], prompts_per_step=32, cfg=cfg)
    info = tmp_path / "ckpt" / "step_19" / "training_info.json"
    info.write_text(json.dumps({**json.loads(info.read_text()), "consumed_samples": 19 * 32 + 1}))
    report = import_checkpoints(tmp_path / "ckpt", tmp_path / "run", fingerprint=FINGERPRINT)
    assert report.global_batch_size == 256
    assert report.problems == ["step 19: 4872 samples consumed, expected step x GBS = 4864"]
    assert [e.samples_count for e in _kinds(tmp_path / "run", "weight_update")] == [18 * 256, 19 * 256 + 8]
