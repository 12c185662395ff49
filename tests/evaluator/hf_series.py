"""A tiny random Llama with a real `tokenizers` BPE tokenizer and a chat template, saved as Hugging Face
safetensors shards, in NeMo-RL's checkpoint layout: step_N/{training_info.json, config.yaml,
policy/weights/ (config.json, model-0000i-of-0000n.safetensors, model.safetensors.index.json),
policy/tokenizer/}. The steps' weights differ slightly, as consecutive training steps' do."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from tests.adoption import nemo_layout

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
    (path / "config.yaml").write_text(yaml.safe_dump(nemo_layout.config()))
    info = {
        "current_step": step,
        "consumed_samples": step * nemo_layout.PROMPTS,
        "training_step_end_time_ms": update_ms,
    }
    (path / "training_info.json").write_text(json.dumps(info))
    written_ns = (update_ms + nemo_layout.WRITE_MS) * 1_000_000
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
