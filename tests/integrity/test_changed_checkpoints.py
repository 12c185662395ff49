"""An evaluation's score is shown as its checkpoint's only while the checkpoint holds the committed bytes:
`recorder evals` rechecks each evaluated step's files by verify's rules and marks a row whose weights were
replaced after it was scored (one byte, its size kept), with no pass verdict."""

from __future__ import annotations

import json
from pathlib import Path

from tests.evaluator.synth import record_run
from tests.helpers import run_cli, run_in_process


def _row(run: Path, step: int) -> dict[str, object]:
    done = run_cli("evals", str(run), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = [r for r in json.loads(done.stdout)["evaluations"] if r["step"] == step]
    return row


def test_a_score_whose_checkpoint_changed_after_scoring_is_marked(tmp_path: Path) -> None:
    run = record_run(tmp_path, target=-1.0, samples=2)
    done = run_in_process("eval", str(run.path))  # the scores, not the process, are read
    assert done.returncode == 0, done.stdout + done.stderr
    honest = _row(run.path, 18)
    assert honest["verdict"] and "CHANGED" not in str(honest["detail"])  # a verdict (NOT COMPARABLE: 2 tasks)

    weights = run.path / "checkpoints" / "step_0000018" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01  # a weight's last byte: the size and the header stay as committed
    weights.write_bytes(bytes(data))

    changed = _row(run.path, 18)
    assert str(changed["detail"]).startswith("CHECKPOINT CHANGED SINCE SCORED (sha256 of step 18's model.safetensors")
    assert changed["pass"] is None and changed["verdict"] is None and changed["accuracy"] == honest["accuracy"]
    table = run_cli("evals", str(run.path), "--wide")
    assert "CHECKPOINT CHANGED SINCE SCORED" in table.stdout, table.stdout
