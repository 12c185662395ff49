"""What every backend's attempt records (its backend, the task spec that scored it), what the summary says was
compared, and `--backend vllm` where vllm is not installed. (vLLM itself: test_vllm_backend.py, marked vllm.)"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from evaluator.session import evaluate_run
from evaluator.settings import Options
from recorder.store.reader import read_run
from tests.helpers import run_in_process
from tests.kit import sample_series
from tests.results_shape import assert_written_in_shape
from trainer.policy.taskspec import load_spec

UPDATES_MS = {18: 1_780_001_080_000}
SPEC = """name = "tiny-numbers"
data = "data.jsonl"
dev = "dev.jsonl"
prompt = "Q: {prompt} A:"
k = 2
temperature = 0.7
top_p = 0.95
max_new_tokens = 3
target = 0.69
[verifier]
kind = "numeric"
"""


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(run with one imported tiny Llama checkpoint, its task spec)."""
    from recorder.adapters.nemo import import_checkpoints
    from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter

    tmp = tmp_path_factory.mktemp("backends")
    rows = [{"id": f"q{i}", "prompt": f"{i} plus {i}?", "answer": str(2 * i)} for i in range(3)]
    (tmp / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "dev.jsonl").write_text('{"id": "d0", "prompt": "One, two, ", "answer": "three."}\n')
    (tmp / "spec.toml").write_text(SPEC)
    series = sample_series.write_series(tmp / "ckpt", UPDATES_MS)
    import_checkpoints(series, tmp / "run", fingerprint=checkpoint_fingerprinter(tmp / "spec.toml"))
    return tmp / "run", tmp / "spec.toml"


def _copy(imported: tuple[Path, Path], tmp_path: Path) -> Path:
    import shutil

    run, _ = imported
    shutil.copytree(run.parent, tmp_path / "copy", ignore=shutil.ignore_patterns("data.jsonl", "dev.jsonl"))
    return tmp_path / "copy" / run.name


def _data(run: Path, kind: str) -> dict:  # type: ignore[type-arg]
    (event,) = [e for e in read_run(run).events if e.kind == kind]
    return dict(event.data)


def test_an_attempt_names_its_backend_and_the_task_spec_that_scored_it(
    imported: tuple[Path, Path], tmp_path: Path
) -> None:
    run, spec_path = _copy(imported, tmp_path), imported[1]
    spec = load_spec(spec_path)
    summary = evaluate_run(run, Options(task=spec_path))
    assert [o.status for o in summary.outcomes] == ["scored"]
    for kind in ("eval_start", "eval_result"):
        data = _data(run, kind)
        assert (data["backend"], data["task"], data["task_sha256"]) == ("torch", "tiny-numbers", spec.sha256), kind
    assert _data(run, "eval_result")["batch_invariant"] is True
    doc = json.loads((run / str(summary.outcomes[0].results)).read_text())
    assert doc["backend"]["batch_invariant"] is True and doc["task"]["spec_sha256"] == spec.sha256


def test_the_command_backends_summary_names_what_it_compared(imported: tuple[Path, Path], tmp_path: Path) -> None:
    run, spec_path = _copy(imported, tmp_path), imported[1]
    script = tmp_path / "ev.py"
    script.write_text("import json, sys; json.dump({'accuracy': 0.8, 'samples': 3}, open(sys.argv[2], 'w'))\n")
    command = f"{sys.executable} {script} {{checkpoint}} {{out}}"
    # --fingerprint off: fewer seconds of model loading on a busy machine
    done = run_in_process(
        "eval", str(run), "--task", str(spec_path), "--backend", "command", "--command", command, "--fingerprint", "off"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "first passing checkpoint: step 18 (the command's accuracy > 0.69)" in done.stdout
    assert "pass@2" not in done.stdout + done.stderr  # the spec's metric did not decide
    start, result = _data(run, "eval_start"), _data(run, "eval_result")
    assert start["backend"] == result["backend"] == "command"
    assert "task" not in start and "batch_invariant" not in result  # the command's own evaluation scored
    assert_written_in_shape(run / result["results"], "command")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_backend_vllm_without_vllm_says_how_to_install_it(imported: tuple[Path, Path], tmp_path: Path) -> None:
    run, spec_path = _copy(imported, tmp_path), imported[1]
    before = sorted(p.name for p in (run / "events").iterdir())
    done = run_in_process("eval", str(run), "--task", str(spec_path), "--backend", "vllm")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: --backend vllm: the vllm package is not installed")
    assert "pip install -e '.[vllm]'" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in (run / "events").iterdir()) == before  # nothing recorded
