"""A checkpoint of any format as (model, tokenizer, manifest, code provenance), in the dtype and on the device
asked for. The recorder's and Hugging Face checkpoints load as the benchmark evaluator loads them; DCP
checkpoints and every model from the team's own code are built, then filled from the state dict."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainer.policy.formats.detect import CheckpointInfo
from trainer.policy.formats.load import load_state_dict, torch_dtype
from trainer.policy.formats.manifest import Manifest, manifest_of
from trainer.policy.formats.model_code import CodeProvenance, build_model
from trainer.policy.tokenizer import Tokenizer, from_json


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCode:
    """--model-code ROOT --model-factory pkg.mod:fn, or neither."""

    root: Path | None = None
    factory: str | None = None


@dataclass(slots=True, kw_only=True)
class Loaded:
    model: Any
    tokenizer: Tokenizer
    manifest: Manifest
    provenance: CodeProvenance | None


def load(info: CheckpointInfo, *, dtype: str, device: str, code: ModelCode) -> Loaded:
    """The checkpoint's model in eval mode. MoE capacity is off (capacity=False) for a factory's model."""
    if code.factory is None and info.format == "recorder":
        from trainer.policy.checkpoint_files import load_checkpoint

        model, tok = load_checkpoint(info.path)
        files = [p for p in info.path.iterdir() if p.is_file()]
        return Loaded(
            model=model.to(dtype=torch_dtype(dtype), device=device).eval(),
            tokenizer=tok,
            manifest=manifest_of(info.path, files),
            provenance=None,
        )
    if code.factory is None and info.format == "hf-safetensors":
        from trainer.policy.hf_checkpoint import find_dirs, load_hf_checkpoint

        model, tok = load_hf_checkpoint(info.path, dtype=dtype, device=device)  # type: ignore[arg-type]
        return Loaded(
            model=model,
            tokenizer=tok,
            manifest=manifest_of(info.path, list(find_dirs(info.path).weights)),
            provenance=None,
        )
    model, provenance = build_model(
        info, dtype=dtype, device=device, model_code=code.root, model_factory=code.factory, capacity=False
    )
    state, manifest = load_state_dict(info, dtype=dtype, expected=model.state_dict())
    model.load_state_dict(state, strict=True)
    return Loaded(model=model.eval(), tokenizer=_tokenizer(info), manifest=manifest, provenance=provenance)


def _tokenizer(info: CheckpointInfo) -> Tokenizer:
    from evaluator.zero_shot.errors import ZeroShotInputError

    if info.tokenizer_dir is None or not (info.tokenizer_dir / "tokenizer.json").is_file():
        raise ZeroShotInputError(
            f"{info.path}: no tokenizer/tokenizer.json here or in its run {info.source_run}: save the tokenizer there"
        )
    return from_json((info.tokenizer_dir / "tokenizer.json").read_text())
