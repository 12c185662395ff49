"""Every file a score rests on is rechecked by `recorder verify` whatever the checkpoint format, evaluated or
not: one byte flipped in a committed file (its size kept) fails verify (exit 1, rule commit-sha) naming the
file, and `recorder evals` marks the evaluated step whose checkpoint changed, with no pass verdict. One
builder per shipped format (recorder.checkpoints.formats.formats()), each writing its checkpoints with the
library that writes that format: the trainer's own writers, megatron-core's golden series, transformers'
save_pretrained, torch DCP, and the Trainer callback's commits."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from recorder.checkpoints.formats import formats
from recorder.store.reader import read_run
from tests.cli.shell import run_main
from tests.evaluator import nemo_run
from tests.kit import mcore_golden, sample_series
from trainer.policy.taskspec import shipped

# the submitter's evaluation command: every checkpoint passes
COMMAND = """
import json, pathlib, sys
pathlib.Path(sys.argv[2]).write_text(json.dumps({"accuracy": 0.75, "samples": 251}))
"""


@dataclass(frozen=True)
class Built:
    """A run whose checkpoints are in one format: the file to flip (committed, scored when `scored`) and how
    verify names it."""

    run: Path
    flip: Path
    named: str
    scored: bool  # False: a format the recorder does not score (another library's file): verify alone
    step: int = 19  # the step whose file is flipped
    other: int = 18  # a step left as committed


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10  # the size stays as committed
    path.write_bytes(bytes(data))


def _ok(*args: str) -> None:
    done = run_main(*args)
    assert done.code == 0, done.out + done.err


def _scored_by_command(run: Path, tmp_path: Path, *extra: str) -> None:
    """Every step scored by the submitter's command (nothing loaded: the shards hashed against the commit)."""
    script = tmp_path / "my_eval.py"
    script.write_text(COMMAND)
    command = f"{sys.executable} {script} {{checkpoint}} {{out}}"
    _ok(
        "eval",
        str(run),
        "--task",
        str(shipped("next-number")),
        "--backend",
        "command",
        "--command",
        command,
        "--all",
        *extra,
    )


def _training_log(tmp_path: Path) -> Path:
    """The NeMo-RL run's training mllog imported: the run the series is imported into."""
    log = nemo_run.write_training_mllog(tmp_path / "mlperf_training.log", final_step=19)
    _ok("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "nemo")
    return tmp_path / "runs" / "nemo"


def _nemo_mcore(tmp_path: Path) -> Built:
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    run = _training_log(tmp_path)
    source = (
        "--model-config",
        str(mcore_golden.model_config("dense-tp1")),
        "--tokenizer",
        str(mcore_golden.tokenizer()),
    )
    _ok("import-checkpoints", str(series), "--into", str(run), *source)
    _scored_by_command(run, tmp_path, *source)
    shard = mcore_golden.ITERATION / "__0_0.distcp"
    return Built(run, series / "step_19" / shard, f"shard {shard.as_posix()}", scored=True)


def _nemo_hf(tmp_path: Path) -> Built:
    series = sample_series.write_series(tmp_path / "checkpoints", {s: nemo_run.update_ms(s) for s in (18, 19)})
    run = _training_log(tmp_path)
    _ok("import-checkpoints", str(series), "--into", str(run))
    _scored_by_command(run, tmp_path)
    shard = sorted((series / "step_19" / "policy" / "weights").glob("*.safetensors"))[0]
    return Built(run, shard, "files under policy/weights", scored=True)


def _dcp(layout: str) -> Callable[[Path], Built]:
    def build(tmp_path: Path) -> Built:
        from tests.checkpoints.test_dcp_import import GBS, write_archives, write_snapshots

        if layout == "archive":
            series = write_archives(tmp_path / "archives", tmp_path / "job")
            step = series / "fsdp2_epoch_2"
        else:
            series = write_snapshots(tmp_path / "job")
            step = series / "snapshots" / "step_19"
        run = tmp_path / "runs" / "fsdp"
        _ok("import-checkpoints", str(series), "--into", str(run), "--global-batch-size", str(GBS))
        _scored_by_command(run, tmp_path)
        return Built(run, step / "__0_0.distcp", "shard __0_0.distcp", scored=True)

    return build


def _trainer_run(tmp_path: Path, checkpoint: Callable[[Path, int, int, int], dict[str, Any]]) -> Path:
    """tests.evaluator.synth's run (2 tasks, every score passes), its checkpoints written by `checkpoint`."""
    from tests.evaluator.synth import _tiny_checkpoint_parts
    from tests.kit import synthetic

    for seed in (0, 1):  # built before recording: building a model between two events would outrun their times
        _tiny_checkpoint_parts(seed, 40.0, 32)
    run = synthetic.record_run(
        tmp_path,
        "run",
        gbs=256,
        steps=19,
        target=-1.0,
        eval_samples=2,
        eval_max_new_tokens=3,
        checkpoint_data=lambda r, step, update: checkpoint(
            r.path / f"checkpoints/step_{step:07d}", step, update, step % 2
        ),
    )
    _ok("eval", str(run.path), "--all")
    return run.path


def _safetensors(tmp_path: Path) -> Built:
    from tests.evaluator.synth import write_tiny_checkpoint

    run = _trainer_run(tmp_path, write_tiny_checkpoint)
    return Built(run, run / "checkpoints/step_0000019/model.safetensors", "model.safetensors", scored=True)


def _write_dcp_checkpoint(directory: Path, step: int, update: int, seed: int) -> dict[str, Any]:
    """The trainer's sharded checkpoint (trainer.saving.sharded_checkpoint's commit), written by its writer."""
    from recorder.checkpoints.torch_dcp.dcp_write import write_dcp_checkpoint
    from tests.evaluator.synth import _tiny_checkpoint_parts

    tensors, config_json, tok_json, fp = _tiny_checkpoint_parts(seed, 40.0, 32)
    directory.parent.mkdir(parents=True, exist_ok=True)
    manifest = write_dcp_checkpoint(
        directory, tensors, config_json=config_json, tokenizer_json=tok_json, step=step, distributed=False
    )
    assert manifest is not None
    files = {
        name: hashlib.sha256(text.encode()).hexdigest()
        for name, text in (("config.json", config_json), ("tokenizer.json", tok_json))
    }
    return {
        "sha256": manifest.root,
        "bytes": manifest.bytes,
        "fingerprint": fp,
        "format": "torch-dcp",
        "dtype": "float32",
        "manifest": manifest.to_dict(),
        "files": files,
    }


def _torch_dcp(tmp_path: Path) -> Built:
    run = _trainer_run(tmp_path, _write_dcp_checkpoint)
    shard = next(p for p in sorted((run / "checkpoints/step_0000019").glob("*.distcp")))
    return Built(run, shard, f"shard {shard.name}", scored=True)


def _trl(weights: str) -> Callable[[Path], Built]:
    """The Trainer callback's commits of checkpoints holding `weights` (a LoRA adapter, or an index with its
    shards), each step's hooks called in the Trainer's order with its real arguments and state."""

    def build(tmp_path: Path) -> Built:
        import torch
        from safetensors.torch import save_file
        from transformers import TrainerControl, TrainerState, TrainingArguments

        from recorder.adapters.trl import RecorderCallback
        from recorder.store.run import RunDir

        run = RunDir.create(tmp_path / "runs", "trl")
        args = TrainingArguments(output_dir=str(run.checkpoints), per_device_train_batch_size=2, report_to=[])
        state, control, callback = TrainerState(), TrainerControl(), RecorderCallback(run)
        callback.on_train_begin(args, state, control)
        tok, model = sample_series.tokenizer(), None
        for step in (1, 2):
            callback.on_optimizer_step(args, state, control)
            state.global_step = step
            callback.on_step_end(args, state, control)
            callback.on_log(args, state, control, logs={"loss": 1.0 / step})
            directory = run.checkpoints / f"checkpoint-{step}"
            if weights == "adapter_model.safetensors":
                torch.manual_seed(step)
                directory.mkdir(parents=True)
                save_file({"base_model.model.lora_A.weight": torch.randn(4, 16)}, str(directory / weights))
            else:
                model = sample_series.model(len(tok), step, hidden_size=16)
                model.save_pretrained(directory, max_shard_size="40KB")
            callback.on_save(args, state, control, model=model)
        callback.on_train_end(args, state, control)
        committed = [e.data["format"] for e in read_run(run).events if e.kind == "checkpoint_committed"]
        assert len(committed) == 2 and committed[0] != "safetensors", committed
        return Built(run.path, run.checkpoints / "checkpoint-2" / weights, weights, scored=False, step=2, other=1)

    return build


BUILDERS: dict[str, Callable[[Path], Built]] = {
    "safetensors": _safetensors,
    "torch-dcp": _torch_dcp,
    "safetensors-adapter": _trl("adapter_model.safetensors"),
    "safetensors-index": _trl("model.safetensors.index.json"),
    "nemo-rl-mcore": _nemo_mcore,
    "nemo-rl-hf": _nemo_hf,
    "dcp-archive": _dcp("archive"),
    "dcp-snapshot": _dcp("snapshot"),
}


def test_every_shipped_format_has_its_builder_here() -> None:
    assert sorted(BUILDERS) == sorted(f.name for f in formats())


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_one_flipped_byte_of_a_committed_file_is_named_by_verify_and_marked_by_evals(name: str, tmp_path: Path) -> None:
    built = BUILDERS[name](tmp_path)
    formats = {e.data["format"] for e in read_run(built.run).events if e.kind == "checkpoint_committed"}
    assert formats == {name}, formats
    _ok("verify", str(built.run))
    if built.scored:
        assert "CHANGED" not in _row(built.run, built.step)["detail"]

    _flip(built.flip)

    done = run_main("verify", str(built.run))
    text = " ".join(done.out.split())
    assert done.code == 1 and "Traceback" not in done.err, done.out + done.err
    assert "[rule commit-sha]" in text and f"step {built.step}'s" in text and built.named in text, text
    assert f"step {built.other}'s" not in text, text  # the other step holds its committed bytes
    if built.scored:
        row = _row(built.run, built.step)
        assert row["detail"].startswith("CHECKPOINT CHANGED SINCE SCORED") and built.named in row["detail"], row
        assert row["pass"] is None and row["verdict"] is None, row  # neither passed nor failed
        assert "CHANGED" not in _row(built.run, built.other)["detail"]


def _row(run: Path, step: int) -> dict[str, Any]:
    done = run_main("evals", str(run), "--format", "json")
    assert done.code == 0, done.out + done.err
    [row] = [r for r in json.loads(done.out)["evaluations"] if r["step"] == step]
    return dict(row)
