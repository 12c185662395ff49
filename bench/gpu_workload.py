"""The work both GRPO trainers do in bench/gpu_bench.py: one model shape, one tokenizer, one prompt set, one
reward. Both sides get the very same objects, so a ratio compares trainers, not workloads.

- Model: a randomly initialised SmolLM2-135M-shaped Llama (hidden 576, 30 layers, 9 heads, 3 KV heads,
  vocab 49152, tied embeddings); `--tiny` shrinks every dimension so the CPU test runs in seconds.
- Tokenizer: a word-level vocabulary: 4 specials, then the words `w4 .. w{V-1}`, so a prompt of P words is exactly
  P tokens for both trainers and any sampled id decodes to one word.
- Reward: the fraction of completion words whose id is even. A random policy scores about 0.5 with a spread
  inside each group, so group advantages are non-zero and both trainers really move the weights.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"  # ids 0..3; not prefixes of any word


@dataclass(frozen=True)
class Shapes:
    """Model and batch shapes of one bench run."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    prompts: int  # prompts per step
    generations: int  # completions per prompt
    prompt_tokens: int  # <bos> included
    completion_tokens: int
    micro_batch: int  # sequences per forward/backward in the update

    @property
    def global_batch(self) -> int:
        return self.prompts * self.generations


FULL = Shapes(
    hidden=576,
    layers=30,
    heads=9,
    kv_heads=3,
    intermediate=1536,
    vocab=49152,
    prompts=16,
    generations=16,
    prompt_tokens=32,
    completion_tokens=128,
    micro_batch=64,
)
TINY = Shapes(
    hidden=64,
    layers=2,
    heads=4,
    kv_heads=2,
    intermediate=128,
    vocab=256,
    prompts=2,
    generations=4,
    prompt_tokens=8,
    completion_tokens=8,
    micro_batch=4,
)


def build_model(shapes: Shapes, *, dtype: Any, device: str, seed: int) -> Any:
    """A fresh randomly initialised LlamaForCausalLM (the same weights for a given seed and shapes)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=shapes.vocab,
        hidden_size=shapes.hidden,
        num_hidden_layers=shapes.layers,
        num_attention_heads=shapes.heads,
        num_key_value_heads=shapes.kv_heads,
        intermediate_size=shapes.intermediate,
        max_position_embeddings=2048,
        rope_theta=100000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        attn_implementation="sdpa",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(cfg)
    return model.to(device=device, dtype=dtype)


def build_hf_tokenizer(shapes: Shapes) -> Any:
    """A transformers fast tokenizer: ids 0..3 pad, bos, eos, unk; then the words w4..w{V-1}."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {PAD: 0, BOS: 1, EOS: 2, UNK: 3, **{f"w{i}": i for i in range(4, shapes.vocab)}}
    raw = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    raw.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token=PAD, bos_token=BOS, eos_token=EOS, unk_token=UNK)
    tok.padding_side = "left"
    return tok


def prompt_texts(shapes: Shapes, steps: int, seed: int = 0) -> list[str]:
    """`steps * prompts` prompts of `prompt_tokens - 1` ordinary words (the trainers add <bos>)."""
    rng = random.Random(f"gpu-bench:{seed}")
    return [
        " ".join(f"w{rng.randrange(4, shapes.vocab)}" for _ in range(shapes.prompt_tokens - 1))
        for _ in range(steps * shapes.prompts)
    ]


def reward_text(text: str) -> float:
    """Fraction of completion words with an even id (0.0 for an empty completion)."""
    words = text.split()
    if not words:
        return 0.0
    return sum(1 for w in words if w[1:].isdigit() and int(w[1:]) % 2 == 0) / len(words)


def trl_reward(completions: list[str], **_: Any) -> list[float]:
    """`reward_text` in TRL's reward-function signature."""
    return [reward_text(c) for c in completions]
