"""Any Hugging Face causal LM checkpoint directory: config.json, safetensors weights (one file, or shards with
their model.safetensors.index.json) and tokenizer files with their chat template.

Loaded through transformers with safetensors only: a directory holding only pickled weights
(pytorch_model.bin, *.pt) is refused, never unpickled, and model code from the directory runs only when
`trust_remote_code` says so. NeMo-RL keeps the weights and the tokenizer apart
(`step_N/policy/weights/[model/]`, `step_N/policy/tokenizer/`); both layouts are found.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from trainer.policy.errors import CheckpointError
from trainer.policy.tokenizer import HFTokenizer

Dtype = Literal["fp32", "bf16", "fp16"]
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
PICKLED = ("pytorch_model.bin", "pytorch_model.bin.index.json", "*.pt", "*.pth", "*.ckpt", "*.pkl")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
# Where a checkpoint directory keeps the model, and where its tokenizer, in the order they are tried.
MODEL_PLACES = (".", "policy/weights", "policy/weights/model", "model")
TOKENIZER_PLACES = ("policy/tokenizer", "tokenizer")


@dataclass(frozen=True, slots=True, kw_only=True)
class HFDirs:
    """Where one checkpoint's model (config.json + safetensors) and tokenizer files are."""

    model: Path
    tokenizer: Path
    weights: tuple[Path, ...]  # the safetensors files, sorted


def find_dirs(path: Path) -> HFDirs:
    """The model and tokenizer directories of a checkpoint; CheckpointError naming what is missing."""
    model = next((path / p for p in MODEL_PLACES if (path / p / "config.json").is_file()), None)
    if model is None:
        places = ", ".join(str(path / p) for p in MODEL_PLACES)
        raise CheckpointError(f"{path}: no config.json (looked in {places}): not a Hugging Face checkpoint")
    model = model.resolve()
    weights = _weights(model)
    tokenizer = next(
        (d for d in [model, *(path / p for p in TOKENIZER_PLACES)] if any((d / f).is_file() for f in TOKENIZER_FILES)),
        None,
    )
    if tokenizer is None:
        raise CheckpointError(
            f"{path}: no tokenizer files ({', '.join(TOKENIZER_FILES)}) next to the weights or in "
            f"{', '.join(TOKENIZER_PLACES)}: save the tokenizer with the checkpoint"
        )
    return HFDirs(model=model, tokenizer=tokenizer.resolve(), weights=weights)


def _weights(model: Path) -> tuple[Path, ...]:
    index = model / INDEX
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
            raise CheckpointError(f"{index}: not a safetensors index (no weight_map): {e}") from e
        missing = [s for s in shards if not (model / s).is_file()]
        if missing:
            raise CheckpointError(f"{index}: names shards that are missing: {', '.join(missing)}")
        return tuple(model / s for s in shards)
    if (model / SINGLE).is_file():
        return (model / SINGLE,)
    pickled = sorted(p.name for pattern in PICKLED for p in model.glob(pattern))
    if pickled:
        raise CheckpointError(
            f"{model}: only pickled weights ({', '.join(pickled)}): refused, nothing is unpickled; "
            "save the model with safetensors (save_pretrained(..., safe_serialization=True))"
        )
    raise CheckpointError(f"{model}: no {SINGLE} and no {INDEX}: no safetensors weights")


def load_hf_checkpoint(
    path: Path | str, *, dtype: Dtype = "fp32", device: str = "cpu", trust_remote_code: bool = False
) -> tuple[Any, ChatTokenizer]:
    """(model in eval mode, tokenizer) from a Hugging Face checkpoint directory."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dirs = find_dirs(Path(path))
    torch_dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(dirs.model),
            dtype=torch_dtype,
            use_safetensors=True,
            trust_remote_code=trust_remote_code,
            local_files_only=True,
        )
        hf = AutoTokenizer.from_pretrained(
            str(dirs.tokenizer), trust_remote_code=trust_remote_code, local_files_only=True
        )
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        hint = "" if trust_remote_code else " (model code from the directory needs --trust-remote-code)"
        raise CheckpointError(f"{path}: cannot load the checkpoint{hint}: {e}") from e
    loaded: Any = model  # transformers' `to` is typed for a wrapper mypy cannot see through
    loaded.to(device).eval()
    return loaded, ChatTokenizer(hf)


class ChatTokenizer(HFTokenizer):
    """A checkpoint's own tokenizer. Sampling and the fingerprint put `bos_id` before every text themselves,
    so a text that already starts with it (a chat template's output does) is encoded without that first
    token: the model then sees it once, as the template meant."""

    def encode(self, text: str) -> list[int]:
        ids = super().encode(text)
        return ids[1:] if ids and ids[0] == self.bos_id else ids
