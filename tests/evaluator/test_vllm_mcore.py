"""`--backend vllm` on NeMo-RL series whose weights the real megatron-core wrote (tests/golden/mcore/), against
`--backend torch` on the same imported run (marked `vllm`: runs in .venv-vllm, see .ci/vllm).

The engine reads no file of the checkpoint: it starts from the base model's config with dummy weights, and the
tensors our loader read (hashed on that read, Megatron's names mapped) are streamed into it. On the dense
(Qwen3-shaped) series and the MoE (Qwen2-MoE-shaped: router, four experts, gated shared expert) series,
greedy in fp32, both backends must give every completion identically, on both steps (whose weights differ,
the second streamed into the engine the first started): a tensor mapped wrongly, missed or left dummy, or an
expert left in the layout of the previous load, changes the completions. Nothing is written in safetensors
anywhere.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluator.scoring import Loading
from evaluator.session import Summary, evaluate_run
from evaluator.settings import Options
from tests.evaluator import nemo_run
from tests.evaluator.test_nemo_end_to_end import SMALL_STEPS
from tests.evaluator.test_vllm_backend import GREEDY_SPEC, SharedEngine
from tests.helpers import run_cli
from tests.kit import mcore_golden

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm")

PROMPTS = 8


@pytest.fixture(scope="module")
def engine() -> Iterator[SharedEngine]:
    workers = SharedEngine()
    yield workers
    workers.shut_down()


@pytest.fixture(scope="module")
def greedy_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Greedy sums, rendered with the golden tokenizer's chat template."""
    d = tmp_path_factory.mktemp("greedy-spec")
    rows = [{"id": f"q{i}", "prompt": f"What is {i} plus {i + 1}?", "answer": str(2 * i + 1)} for i in range(PROMPTS)]
    (d / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    dev = [{"id": f"d{i}", "prompt": f"Count to {i}.", "answer": str(i)} for i in range(4)]
    (d / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dev))
    (d / "spec.toml").write_text(GREEDY_SPEC)  # chat: the golden tokenizer has a template
    return d / "spec.toml"


def _source(kind: str) -> dict[str, Path]:
    return {"model_config": mcore_golden.model_config(kind), "tokenizer": mcore_golden.tokenizer()}


def _imported(tmp: Path, kind: str) -> Path:
    """The run a submitter has: the training mllog imported, then the series' checkpoints."""
    series = mcore_golden.copy_series(kind, tmp / "checkpoints")
    log = nemo_run.write_training_mllog(tmp / "mlperf_training.log", final_step=SMALL_STEPS[-1])
    done = run_cli("import", str(log), "--root", str(tmp / "runs"), "--run-id", "nemo")
    assert done.returncode == 0, done.stdout + done.stderr
    source = _source(kind)
    done = run_cli(
        "import-checkpoints", str(series), "--into", str(tmp / "runs" / "nemo"),
        "--model-config", str(source["model_config"]), "--tokenizer", str(source["tokenizer"]), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp / "runs" / "nemo"


def _summary(base: Path, into: Path, backend: str, engine: SharedEngine, **options: Any) -> tuple[Summary, Path]:
    """Every checkpoint of a copy of the run (and the series beside it) evaluated by `backend`."""
    shutil.copytree(base.parent.parent, into)
    run = into / base.parent.name / base.name
    factory = (lambda n, address: engine) if backend == "vllm" else None
    return evaluate_run(run, Options(all=True, backend=backend, **options), workers_factory=factory), run


def _evaluate(base: Path, into: Path, backend: str, engine: SharedEngine, **options: Any) -> list[dict[str, Any]]:
    """Every checkpoint scored by `backend` (as _summary): their results.json."""
    summary, run = _summary(base, into, backend, engine, **options)
    assert [o.status for o in summary.outcomes] == ["scored"] * len(SMALL_STEPS), summary.outcomes
    assert not sorted(into.rglob("*.safetensors"))  # nothing converted: the shards are Megatron's own
    return [json.loads((run / str(o.results)).read_text()) for o in summary.outcomes]


@pytest.mark.parametrize("kind", ["dense-tp1", "moe"])
def test_a_megatron_core_series_gives_vllm_the_torch_backends_completions(
    kind: str, greedy_spec: Path, engine: SharedEngine, tmp_path: Path
) -> None:
    base = _imported(tmp_path / "imported", kind)
    settings = {"task": greedy_spec, "dtype": "fp32", **_source(kind)}
    torch_docs = _evaluate(base, tmp_path / "torch", "torch", engine, **settings)
    vllm_docs = _evaluate(base, tmp_path / "vllm", "vllm", engine, **settings)
    assert [d["step"] for d in vllm_docs] == list(SMALL_STEPS)  # the second streamed into the same engine
    for t, v in zip(torch_docs, vllm_docs, strict=True):
        completions = [s["completion_sha256"] for s in t["samples"]]
        assert [s["completion_sha256"] for s in v["samples"]] == completions
        assert len(set(completions)) > 1  # the prompts really lead to different completions
        assert (v["score"], v["passed"], v["n_tasks"], v["k"]) == (t["score"], t["passed"], t["n_tasks"], t["k"])
        assert v["fingerprint"]["checked"] and v["fingerprint"]["measured"] == t["fingerprint"]["measured"]
        assert v["backend"]["name"] == "vllm" and v["backend"]["format"] == "mcore-torch-dist"
        assert v["backend"]["manifest_root"] == t["backend"]["manifest_root"]
    # the two steps' weights differ, and the engine followed them
    assert [s["completion_sha256"] for s in vllm_docs[0]["samples"]] != [
        s["completion_sha256"] for s in vllm_docs[1]["samples"]
    ]


def test_a_tensor_that_does_not_reach_vllm_is_named(greedy_spec: Path, engine: SharedEngine, tmp_path: Path) -> None:
    """The engine names every parameter no streamed tensor reached (it would sample from dummy weights)."""
    import torch

    from evaluator.vllm_engine.vllm_refit import stream_weights
    from recorder.checkpoints.detect import ModelSource
    from recorder.checkpoints.readers import detect, load_state_dict

    checkpoint = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints") / "step_18"
    source = _source("dense-tp1")
    engine.load(
        str(checkpoint), None, Loading(task=str(greedy_spec), dtype="fp32", **{k: str(v) for k, v in source.items()})
    )
    state, _ = load_state_dict(
        detect(checkpoint, ModelSource(source["model_config"], source["tokenizer"])), dtype="fp32"
    )
    assert stream_weights(engine.llm, state.items(), torch.float32) == []
    del state["model.layers.1.mlp.down_proj.weight"]
    assert stream_weights(engine.llm, state.items(), torch.float32) == ["model.layers.1.mlp.down_proj.weight"]
