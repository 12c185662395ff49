"""Default tier: a NeMo-RL deferred-evaluation run end to end through the CLI.

Its training mllog is imported, its checkpoint series (a tiny random Llama with a real `tokenizers`
tokenizer, Hugging Face safetensors shards, `step_N/training_info.json`) is imported, `recorder eval --task`
evaluates it with a shipped task spec, and `recorder replay --check` derives the mllog and runs
mlperf-logging's 6.1.0 compliance and RCP checkers on it. A random model scores 0, so the submitter's
command (`--backend command`) decides what passes here; tests/evaluator/test_smollm2_end_to_end.py does the
same with SmolLM2-135M-Instruct and the torch backend, where the model's real accuracy decides.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.evaluator import nemo_run
from tests.helpers import run_cli
from tests.kit import sample_series
from trainer.policy.taskspec import shipped

STEPS = (18, 19, 20)  # GBS 256: validation start 18; training stopped after 20 (the slow SmolLM2 series)
# Here training stops after 19, the recommended validation start + 1: two checkpoints to fingerprint, not three.
SMALL_STEPS = (18, 19)

# The submitter's evaluation: step 18 scores 0.5, later steps 0.75 (> 0.69).
COMMAND = """
import json, pathlib, sys
step = int(pathlib.Path(sys.argv[1]).name.removeprefix("step_"))
pathlib.Path(sys.argv[2]).write_text(json.dumps({"accuracy": 0.5 if step == 18 else 0.75, "samples": 251}))
"""


def mllog(path: Path) -> list[dict]:
    return [json.loads(t.split(":::MLLOG ", 1)[1]) for t in path.read_text().splitlines() if ":::MLLOG " in t]


def import_nemo_run(
    tmp_path: Path, series: Path, spec: Path, timeout: float = 600, steps: tuple[int, ...] = STEPS
) -> Path:
    """`recorder import` the training mllog of a run that stopped after `steps[-1]`, then `recorder
    import-checkpoints` the series into that run (`timeout`: seconds the import may take; it fingerprints
    every checkpoint)."""
    log = nemo_run.write_training_mllog(tmp_path / "mlperf_training.log", final_step=steps[-1])
    done = run_cli("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "nemo")
    assert done.returncode == 0, done.stdout + done.stderr
    run = tmp_path / "runs" / "nemo"
    done = run_cli("import-checkpoints", str(series), "--into", str(run), "--task", str(spec), timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_quiet(done.stderr)  # it loads every checkpoint with transformers to fingerprint it
    return run


def assert_quiet(stderr: str) -> None:
    """No chatter from the libraries we call (recorder/cli/terminal/quiet.py): transformers' progress bars ("Loading
    weights: 100%|...| 21/21"), its warnings, Ray's banner."""
    assert not re.search(r"\d+%\|", stderr), stderr
    assert "Loading weights" not in stderr and "Token authentication" not in stderr, stderr


def check_replay(run: Path, series: Path, passing: int) -> None:
    """`recorder replay --check` under official: both checkers pass, run_stop is the passing step's
    training_step_end_time_ms, and the evaluations are emitted from the validation start up to it."""
    done = run_cli("replay", str(run), "--interpretation", "official", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning" not in done.stderr, done.stderr  # an honest import, evaluation and replay: no alarm
    assert "compliance checker (mlperf-logging" in done.stdout and "training 6.1.0): PASSED" in done.stdout
    assert "RCP checker (mlperf-logging" in done.stdout and "RCP found" in done.stdout
    lines = mllog(run / "derived" / "result_official.txt")
    stop = lines[-1]
    info = json.loads((series / f"step_{passing}" / "training_info.json").read_text())
    assert stop["key"] == "run_stop" and stop["metadata"]["status"] == "success"
    assert stop["time_ms"] == info["training_step_end_time_ms"] == nemo_run.update_ms(passing)
    evaluated = [x["metadata"]["samples_count"] for x in lines if x["key"] == "eval_accuracy"]
    assert evaluated == [s * nemo_run.GBS for s in range(STEPS[0], passing + 1)]


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nemo") / "checkpoints"
    return sample_series.write_series(root, {s: nemo_run.update_ms(s) for s in SMALL_STEPS})


def test_nemo_series_end_to_end_passes_both_checkers(series: Path, tmp_path: Path) -> None:
    spec = shipped("next-number")
    run = import_nemo_run(tmp_path, series, spec, steps=SMALL_STEPS)
    script = tmp_path / "my_eval.py"
    script.write_text(COMMAND)
    done = run_cli(
        "eval",
        str(run),
        "--task",
        str(spec),
        "--backend",
        "command",
        "--command",
        f"{sys.executable} {script} {{checkpoint}} {{out}}",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "first passing checkpoint: step 19" in done.stdout
    assert_quiet(done.stderr)  # the integrity check loaded each checkpoint to recompute its fingerprint
    check_replay(run, series, passing=19)
