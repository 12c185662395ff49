"""The default run (the session's `trained_run`) against the 6.1 checkpoint rule and the catalogue."""

import hashlib
from pathlib import Path

import pytest

from recorder.checkpoints.fingerprint import fingerprint, matches
from recorder.checkpoints.recorder_format import file_sha256, load_checkpoint, read_metadata
from recorder.store.reader import read_run
from recorder.verify import verify_run
from replay.ruleset_facts import FACTS

GBS, VALIDATION_START, FINAL = 256, 18, 19


@pytest.fixture(scope="module")
def events(trained_run):
    return read_run(trained_run).events


def of(events, kind):
    return [e for e in events if e.kind == kind]


def test_log_is_intact_and_ordered(trained_run, events):
    assert verify_run(trained_run).ok
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_opened"
    head = kinds[kinds.index("init_start") : kinds.index("init_start") + 4]
    assert head == ["init_start", "init_stop", "run_start", "block_start"]
    assert kinds[-3:] == ["block_stop", "train_stop", "segment_closed"]
    stop = of(events, "train_stop")[0]
    assert stop.data == {"status": "completed", "reason": ""} and stop.step == FINAL


def test_every_step_updates_weights_and_trains_the_full_batch(events):
    updates = of(events, "weight_update")
    metrics = of(events, "step_metrics")
    assert [e.step for e in updates] == [e.step for e in metrics] == list(range(1, FINAL + 1))
    for u, m in zip(updates, metrics, strict=False):
        assert u.samples_count == m.samples_count == u.step * GBS
        assert m.data["samples"] == GBS and m.data["tokens"] > 0
        assert m.time_ns >= u.time_ns  # step_metrics comes after its weight update
        assert {
            "loss",
            "reward",
            "grad_norm",
            "generation_s",
            "train_s",
            "refit_s",
            "checkpoint_block_s",
            "step_s",
        } <= set(m.data)
    assert metrics[-1].data["samples"] == GBS  # the final step too


def test_checkpoints_exactly_from_validation_start(trained_run, events):
    commits = of(events, "checkpoint_committed")
    assert sorted(e.step for e in commits) == list(range(VALIDATION_START, FINAL + 1))
    on_disk = sorted(p.name for p in (trained_run / "checkpoints").iterdir())
    assert on_disk == [f"step_{s:07d}" for s in range(VALIDATION_START, FINAL + 1)]  # nothing earlier, no temp
    updates = {e.step: e.time_ns for e in of(events, "weight_update")}
    for c in commits:
        d = c.data
        path = trained_run / d["path"]
        assert file_sha256(path / "model.safetensors") == d["sha256"]
        assert (path / "model.safetensors").stat().st_size == d["bytes"]
        assert d["weight_update_ns"] == updates[c.step] == int(read_metadata(path)["weight_update_ns"])
        assert d["save_begin_ns"] <= d["save_end_ns"] <= c.time_ns and d["blocked_ns"] >= 0
        assert d["format"] == "safetensors" and d["fingerprint"]["method"] == "holdout_mean_loglik"


def test_fingerprint_recomputes_from_the_weights(trained_run, events):
    c = of(events, "checkpoint_committed")[-1]
    model, tok = load_checkpoint(trained_run / c.data["path"])
    assert matches(c.data["fingerprint"]["value"], fingerprint(model, tok))


def test_run_opened_and_mllog_config(events):
    opened = of(events, "run_opened")[0].data
    assert opened["benchmark"] == "qwen35_397b_grpo" and opened["division"] == "open"
    assert opened["global_batch_size"] == GBS and opened["config"]["eval"]["k"] == 4
    assert opened["target"] == opened["config"]["eval"]["target"] == 0.69  # the one pass target, recorded
    assert opened["provenance"]["packages"]["torch"].startswith("2.13.0")
    assert "git_commit" in opened["provenance"] and opened["provenance"]["host"]
    keys = [e.key for e in of(events, "mllog_config")]
    assert len(keys) == len(set(keys))  # one per key
    required = set(FACTS["6.1.0"].required_keys("open")) | set(FACTS["6.1.0"].required_keys("closed"))
    assert required - {"cache_clear"} <= set(keys), required - set(keys)
    values = {e.key: e.value for e in of(events, "mllog_config")}
    updates = opened["config"]["updates_per_rollout"]  # optimizer steps per rollout batch, on equal shares
    assert values["gradient_accumulation_steps"] * values["micro_batch_size"] * updates == GBS
    assert values["num_prompts_per_step"] * values["num_generations_per_prompt"] == GBS


def test_warmup_recorded_before_the_timed_region(events):
    init = of(events, "init_start")[0]
    w = init.data["warmup"]
    assert w["batches"] > 0 and 0 < w["dev_accuracy"] < 0.69
    assert Path(w["cache_path"]).is_dir()
    init_weights = Path(w["cache_path"]) / "model.safetensors"
    assert w["sha256"] == hashlib.sha256(init_weights.read_bytes()).hexdigest()
