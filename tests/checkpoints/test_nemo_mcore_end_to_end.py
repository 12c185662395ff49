"""A NeMo-RL series whose weights are Megatron-Core `torch_dist` (policy/weights/iter_0000000/ shards with
Megatron's names) through `import-checkpoints`, `eval` and `replay --check`: the weights are loaded and
fingerprinted at import, checked shard by shard at evaluation, and both 6.1.0 checkers pass. No
`--fingerprint off`: the fingerprint is recomputed from the Megatron weights."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from tests.adoption import nemo_layout
from tests.checkpoints.test_formats import _RunsACommand
from tests.evaluator import nemo_run
from tests.evaluator.test_nemo_end_to_end import COMMAND, SMALL_STEPS, check_replay
from tests.helpers import run_cli
from trainer.policy.taskspec import shipped


def _series(root: Path) -> Path:
    for step in SMALL_STEPS:
        nemo_layout.write_checkpoint(root, step, nemo_run.update_ms(step))
    return root


def _import(tmp_path: Path, series: Path) -> Path:
    log = nemo_run.write_training_mllog(tmp_path / "mlperf_training.log", final_step=SMALL_STEPS[-1])
    done = run_cli("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "nemo")
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "nemo"
    done = run_cli("import-checkpoints", str(series), "--into", str(run), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return run


def test_megatron_series_imports_evaluates_and_replays_with_both_checkers_passing(tmp_path: Path) -> None:
    series = _series(tmp_path / "checkpoints")
    run = _import(tmp_path, series)
    script = tmp_path / "my_eval.py"
    script.write_text(COMMAND)
    spec = shipped("next-number")
    done = run_cli(
        "eval", str(run), "--task", str(spec), "--backend", "command",
        "--command", f"{sys.executable} {script} {{checkpoint}} {{out}}",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "first passing checkpoint: step 19" in done.stdout
    check_replay(run, series, passing=19)
    done = run_cli("verify", str(run))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_flipped_megatron_shard_is_refused_naming_it(tmp_path: Path) -> None:
    series = _series(tmp_path / "checkpoints")
    run = _import(tmp_path, series)
    shard = series / "step_18" / "policy" / "weights" / "iter_0000000" / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[len(data) // 3] ^= 0x10
    shard.write_bytes(bytes(data))
    done = run_cli("eval", str(run), "--task", str(shipped("next-number")), "--all")
    assert done.returncode == 1, done.stdout + done.stderr
    done = run_cli("evals", str(run))
    assert "HashMismatchError" in done.stdout and "__0_0.distcp" in done.stdout.replace("\n", ""), done.stdout


def test_a_hostile_metadata_is_refused_with_one_error_line_and_never_runs(tmp_path: Path) -> None:
    series = _series(tmp_path / "checkpoints")
    marker = tmp_path / "command-ran"
    (series / "step_19" / "policy" / "weights" / "iter_0000000" / ".metadata").write_bytes(
        pickle.dumps(_RunsACommand(marker))
    )
    log = nemo_run.write_training_mllog(tmp_path / "mlperf_training.log", final_step=SMALL_STEPS[-1])
    assert run_cli("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "nemo").returncode == 0
    done = run_cli("import-checkpoints", str(series), "--into", str(tmp_path / "runs" / "nemo"))
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and ".metadata: names posix.system" in done.stderr.replace("\n", ""), done.stderr
    assert not marker.exists()
