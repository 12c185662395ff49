"""Any Hugging Face checkpoint directory, in NeMo-RL's layout: import (fingerprint recorded), evaluate with a
task spec (sharded safetensors, chat template), refuse pickles and swapped tokenizers, and run the
submitter's own evaluation command. A tiny random Llama with a real BPE tokenizer: scores are near 0."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from evaluator.order import parse_order
from evaluator.session import Summary, evaluate_run
from evaluator.settings import Options
from recorder.adapters.nemo import CheckpointLayoutError
from recorder.checkpoints.hugging_face.hf_checkpoint import load_hf_checkpoint
from recorder.store.reader import read_run
from tests.helpers import run_in_process
from tests.kit import sample_series
from trainer.policy import CheckpointError

T0_MS = 1_780_000_000_000
UPDATES_MS = {18: T0_MS + 1_080_000, 19: T0_MS + 1_142_000, 20: T0_MS + 1_204_000}
SPEC = """name = "tiny-chat"
data = "data.jsonl"
dev = "dev.jsonl"
chat = true
system = "Answer with a number."
k = 2
temperature = 0.7
top_p = 0.95
max_new_tokens = 4
target = 0.69
[verifier]
kind = "numeric"
"""


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_series.write_series(tmp_path_factory.mktemp("hf") / "ckpt", UPDATES_MS)


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("spec")
    rows = [{"id": f"q{i}", "prompt": f"What is {i} plus {i + 1}?", "answer": str(2 * i + 1)} for i in range(6)]
    (d / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "dev.jsonl").write_text('{"id": "d0", "prompt": "Two and two make ", "answer": "four."}\n')
    (d / "spec.toml").write_text(SPEC)
    return d / "spec.toml"


def _import(series: Path, run: Path, spec: Path | None = None) -> None:
    """In this process: each `recorder` subprocess pays transformers' import again (seconds)."""
    from recorder.adapters.nemo import import_checkpoints
    from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter

    import_checkpoints(series, run, fingerprint=checkpoint_fingerprinter(spec))


def _evaluate(run: Path, **options: object) -> Summary:
    return evaluate_run(run, Options(**options))  # type: ignore[arg-type]


def _events(run: Path, kind: str) -> list:  # type: ignore[type-arg]
    return [e for e in read_run(run).events if e.kind == kind]


def test_sharded_hf_series_imports_with_fingerprints_and_evaluates(series: Path, spec: Path, tmp_path: Path) -> None:
    run = tmp_path / "runs" / "nemo"
    _import(series, run, spec)
    commits = _events(run, "checkpoint_committed")
    assert [c.data["format"] for c in commits] == ["nemo-rl-hf"] * 3
    fps = [c.data["fingerprint"] for c in commits]
    assert {f["method"] for f in fps} == {"mean_loglik"} and {f["texts"] for f in fps} == {"dev:tiny-chat"}
    assert len({f["value"] for f in fps}) == 3  # the steps' weights differ, and so do their fingerprints

    done = run_in_process("eval", str(run), "--task", str(spec), "--all")
    assert done.returncode == 1, done.stdout + done.stderr  # a random model passes nothing
    assert "no evaluated checkpoint reached pass@2 > 0.69" in done.stderr
    results = _events(run, "eval_result")
    assert [e.step for e in results] == [18, 19, 20]
    doc = json.loads((run / results[0].data["results"]).read_text())
    assert doc["task"]["name"] == "tiny-chat" and doc["task"]["verifier_version"] == "numeric/1"
    assert doc["task"]["chat"] is True and doc["n_tasks"] == 6 and doc["k"] == 2
    assert doc["fingerprint"]["checked"] is True and doc["fingerprint"]["max_abs_diff"] < 1e-4
    assert len(doc["samples"]) == 12 and doc["settings"]["max_new_tokens"] == 4


def test_without_a_spec_an_imported_run_asks_for_one(series: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    _import(series, run)
    done = run_in_process("eval", str(run))
    assert done.returncode == 2
    assert "error:" in done.stderr and "--task FILE" in done.stderr and "Traceback" not in done.stderr


def test_a_pickle_only_checkpoint_is_refused(series: Path, tmp_path: Path) -> None:
    import torch

    root = tmp_path / "ckpt"
    shutil.copytree(series / "step_18", root / "step_18")
    weights = root / "step_18" / "policy" / "weights"
    for f in [*weights.glob("*.safetensors"), weights / "model.safetensors.index.json"]:
        f.unlink()
    torch.save({"w": torch.zeros(1)}, weights / "pytorch_model.bin")
    with pytest.raises(CheckpointLayoutError, match=r"only pickled weights \(pytorch_model.bin\): refused, nothing"):
        _import(root, tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before anything was recorded
    with pytest.raises(CheckpointError, match="refused, nothing is unpickled"):
        load_hf_checkpoint(root / "step_18")


def test_a_swapped_tokenizer_is_caught_by_the_fingerprint(series: Path, spec: Path, tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    shutil.copytree(series, root)
    run = tmp_path / "run"
    _import(root, run, spec)
    other = sample_series.tokenizer(corpus=["another model's text: tokens split differently", "zebra quartz"])
    shutil.rmtree(root / "step_18" / "policy" / "tokenizer")
    other.save_pretrained(root / "step_18" / "policy" / "tokenizer")
    summary = _evaluate(run, task=spec, order=parse_order("18"))
    assert [o.status for o in summary.outcomes] == ["failed"]
    (failed,) = _events(run, "eval_failed")
    assert failed.step == 18 and failed.data["error"] == "FingerprintMismatchError"
    assert "the weights, tokenizer or code differ" in failed.data["reason"]
    assert not _events(run, "eval_result")


SCRIPTS = {
    "fixed": "import json, sys; json.dump({'accuracy': 0.5, 'samples': 10}, open(sys.argv[2], 'w'))",
    "exit3": "import sys; print('out of memory', file=sys.stderr); sys.exit(3)",
    "garbage": "import sys; open(sys.argv[2], 'w').write('accuracy: high')",
}


def test_command_backend_scores_once_and_records_two_failures(series: Path, spec: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    _import(series, run, spec)
    for step, name in ((18, "fixed"), (19, "exit3"), (20, "garbage")):
        script = tmp_path / f"{name}.py"
        script.write_text(SCRIPTS[name] + "\n")
        command = f"{sys.executable} {script} {{checkpoint}} {{out}}"
        summary = _evaluate(run, task=spec, order=parse_order(str(step)), backend="command", command=command)
        assert not summary.passing_step  # 0.5 is below the target; the others fail
    (result,) = _events(run, "eval_result")
    assert (result.step, result.value, result.data["metric"]) == (18, 0.5, "command")
    doc = json.loads((run / result.data["results"]).read_text())
    assert doc["provenance"]["command"]["exit_status"] == 0
    assert str((series / "step_18").resolve()) in doc["provenance"]["command"]["command"]
    assert doc["fingerprint"]["checked"] is True  # the integrity checks ran before the command
    failed = {e.step: e.data for e in _events(run, "eval_failed")}
    assert failed[19]["error"] == "CommandFailed" and failed[19]["exit_status"] == 3
    assert "exited with status 3 (out of memory)" in failed[19]["reason"]
    assert len(failed[19]["stderr_sha256"]) == 64
    assert failed[20]["error"] == "CommandFailed" and "is not JSON" in failed[20]["reason"]


def test_command_never_runs_on_altered_weights(series: Path, spec: Path, tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    shutil.copytree(series, root)
    run = tmp_path / "run"
    _import(root, run, spec)
    shard = sorted((root / "step_18" / "policy" / "weights").glob("*.safetensors"))[0]
    shard.write_bytes(shard.read_bytes()[:-1] + b"\x00")
    marker = tmp_path / "ran"
    command = f"{sys.executable} -c \"open('{marker}', 'w')\" {{checkpoint}} {{out}}"
    # verify rechecks the imported weights before any evaluation: the run is refused, the command never runs
    from evaluator.errors import UnverifiedRunError

    with pytest.raises(UnverifiedRunError, match="step 18's files under policy/weights"):
        _evaluate(run, task=spec, order=parse_order("18"), backend="command", command=command)
    assert not marker.exists() and not _events(run, "eval_failed")


def test_hugging_face_weights_are_not_imported_without_their_fingerprint(series: Path, tmp_path: Path) -> None:
    """The importer loads no weights itself: the caller gives it the fingerprint function (the CLI does)."""
    from recorder.adapters.nemo import NemoImportError, import_checkpoints

    with pytest.raises(NemoImportError, match="no fingerprint function was given"):
        import_checkpoints(series, tmp_path / "run")
    assert not (tmp_path / "run").exists()
