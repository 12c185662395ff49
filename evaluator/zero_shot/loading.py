"""A checkpoint of any format loaded for scoring, through the formats' loader (trainer/policy/checkpoints/):
detected, every shard hashed as it is read, the model built from its config or the team's own factory
(MoE capacity off: a sample's score must not depend on its batch), its tokenizer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from trainer.policy.checkpoints.detect import CheckpointInfo
from trainer.policy.checkpoints.evaluable import Loaded, load_checkpoint


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCode:
    """--model-code ROOT --model-factory pkg.mod:fn, or neither."""

    root: Path | None = None
    factory: str | None = None


def load(info: CheckpointInfo, *, dtype: str, device: str, code: ModelCode) -> Loaded:
    """The checkpoint's model (eval mode) in `dtype` on `device`, its tokenizer, manifest and code provenance."""
    return load_checkpoint(
        info.path, dtype=dtype, device=device, model_code=code.root, model_factory=code.factory, capacity=False
    )
