"""Bad input: every config error at once (exit 2), an existing run id refused (exit 2), a checkpoint
write that fails ends the run with train_stop naming the reason, no commit event, exit code 1."""

import pytest

from recorder.store.reader import read_run
from tests.helpers import run_cli
from trainer.config import load_config
from trainer.errors import TrainingFailed
from trainer.loop import GRPOTrainer
from trainer.policy.model import ModelConfig


def test_all_config_errors_at_once(tmp_path):
    r = run_cli(
        "train",
        "--root",
        str(tmp_path),
        "--set",
        "eval.k=0",
        "--set",
        "model=gpt",
        "--set",
        "learning_rate=abc",
        "--set",
        "max_steps=3",
        "--set",
        "checkpoint.synch=true",
    )
    assert r.returncode == 2, r.stderr
    for field in ("eval.k", "model", "learning_rate", "max_steps", "checkpoint.synch"):
        assert field in r.stderr
    assert "5 invalid config value(s)" in r.stderr and "Traceback" not in r.stderr
    assert not tmp_path.joinpath("runs").exists() and list(tmp_path.iterdir()) == []  # nothing created


def test_missing_config_file(tmp_path):
    r = run_cli("train", "--root", str(tmp_path), "--config", str(tmp_path / "nope.toml"))
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr


def test_existing_run_id_refused(tmp_path):
    (tmp_path / "taken" / "events").mkdir(parents=True)
    r = run_cli("train", "--root", str(tmp_path), "--run-id", "taken", "--set", "warmup.enabled=false")
    assert r.returncode == 2 and "already exists" in r.stderr and "Traceback" not in r.stderr
    assert list((tmp_path / "taken" / "events").iterdir()) == []  # the existing run is untouched


class _FullDisk(GRPOTrainer):
    """A real filesystem failure: after setup, a file stands where the checkpoints directory must go."""

    def setup(self):
        run = super().setup()
        run.checkpoints.write_text("not a directory")
        return run


def test_checkpoint_write_failure_stops_the_run(tmp_path):
    # Asynchronous (the default): the failure surfaces from the background writer. The synchronous path's
    # failure is covered in test_checkpoint.py::test_failed_write_is_not_committed.
    cfg = load_config(sets=["warmup.enabled=false", "threads=1"])
    small = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)  # the write is what fails
    with pytest.raises(TrainingFailed) as info:
        _FullDisk(cfg, root=tmp_path, run_id="r", model_cfg=small).run()
    assert info.value.exit_code == 1
    events = read_run(tmp_path / "r").events
    assert not [e for e in events if e.kind == "checkpoint_committed"]
    stop = [e for e in events if e.kind == "train_stop"]
    assert len(stop) == 1 and stop[0].data["status"] == "failed"
    assert "step 18" in stop[0].data["reason"] and "could not be written" in stop[0].data["reason"]
    assert [e.kind for e in events][-2:] == ["train_stop", "segment_closed"]
    assert not [e for e in events if e.kind == "block_stop"]
