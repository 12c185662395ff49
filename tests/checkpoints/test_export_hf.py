"""`recorder export-hf` on the golden megatron-core series: the exported Hugging Face directory loads (our
loader, transformers' own `from_pretrained`) to the very tensors the Megatron step loads to, so the same
inputs give the same logits bit for bit and the same greedy completions."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from recorder.checkpoints.detect import ModelSource
from recorder.checkpoints.evaluable import load_checkpoint
from tests.cli.shell import run_main
from tests.helpers import run_cli
from tests.kit import mcore_golden
from tests.kit.mcore_golden import GOLDEN, SERIES

PROMPTS = ["What is 2 plus 3?", "One, two, three,"]


def _source(kind: str) -> list[str]:
    return ["--model-config", str(mcore_golden.model_config(kind)), "--tokenizer", str(mcore_golden.tokenizer())]


def _greedy(model: torch.nn.Module, tokenizer: object, prompt: str) -> list[int]:
    ids = torch.tensor([tokenizer.encode(prompt)])  # type: ignore[attr-defined]
    with torch.no_grad():
        for _ in range(8):
            next_id = model(ids).logits[0, -1].argmax()
            ids = torch.cat([ids, next_id.view(1, 1)], dim=1)
    return [int(i) for i in ids[0]]


@pytest.mark.parametrize("kind", SERIES)
def test_an_exported_megatron_step_is_the_same_model(kind: str, tmp_path: Path) -> None:
    step = GOLDEN / kind / "step_19"
    out = tmp_path / "hf"
    done = run_main("export-hf", str(step), "-o", str(out), *_source(kind))  # in this process: the export is read
    assert done.code == 0, done.out + done.err
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= {p.name for p in out.iterdir()}
    megatron = load_checkpoint(
        step, dtype="fp32", source=ModelSource(mcore_golden.model_config(kind), mcore_golden.tokenizer())
    )
    exported = load_checkpoint(out, dtype="fp32")
    assert exported.info.format == "hf-safetensors"
    ours, theirs = megatron.model.state_dict(), exported.model.state_dict()
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
    for name in ("tokenizer.json", "tokenizer_config.json"):  # the tokenizer's files as they were
        assert (out / name).read_bytes() == (mcore_golden.tokenizer() / name).read_bytes()
    # One tokenizer for both: transformers 5 picks a Qwen3.5 tokenizer class from the config.json beside the
    # files (the export has one, the golden tokenizer directory none), which tokenizes our tiny BPE otherwise.
    for prompt in PROMPTS:
        tok = megatron.tokenizer
        assert _greedy(megatron.model, tok, prompt) == _greedy(exported.model, tok, prompt)


def test_transformers_loads_the_export_itself(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    out = tmp_path / "hf"
    done = run_main("export-hf", str(GOLDEN / "moe" / "step_18"), "-o", str(out), *_source("moe"))
    assert done.code == 0, done.out + done.err
    model = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    ours = load_checkpoint(out, dtype="fp32").model.state_dict()
    assert all(torch.equal(v, ours[k]) for k, v in model.state_dict().items())


def test_export_refuses_a_directory_with_files_in_it(tmp_path: Path) -> None:
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "notes.txt").write_text("mine")
    done = run_cli(
        "export-hf", str(GOLDEN / "dense-tp1" / "step_18"), "-o", str(tmp_path / "hf"), *_source("dense-tp1")
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "exists and is not empty" in done.stderr and (tmp_path / "hf" / "notes.txt").read_text() == "mine"
