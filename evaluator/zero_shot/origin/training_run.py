"""A pretraining run directory as the holdout check reads it (docs/zero-shot.md, "The training run"):

    <run>/config.json              the model's config (Hugging Face style, with model_type)
    <run>/training.json            {"data": {"holdout": PATH, "seq_len": N}, "eval": {"tokens": N},
                                    "world_size": N}
    <run>/tensorboard_scalars.json {"eval/loss": [{"step": S, "value": V}, ...], ...}
    <run>/**/events.out.tfevents.* the same scalars as TensorBoard wrote them (either one is the reference)

`data.holdout` is relative to the run directory unless absolute: one document per line (text), or JSON lines
with a "text" field. `eval.tokens` is the token budget of one evaluation over all ranks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.zero_shot.errors import ZeroShotInputError
from recorder.checkpoints.torch_dcp.fsdp2_layout import PLAIN_RUN_CONFIG

TRAINING_CONFIG = PLAIN_RUN_CONFIG


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldoutPlan:
    """How training computed eval/loss: its holdout documents, row length, token budget and world size; the
    rows per forward pass (None: --batch-size), the parameter dtype and whether MoE capacity was on; the
    team's own loss function (`--holdout-fn`) and the config it is given, when there is one."""

    data: Path
    seq_len: int
    tokens: int
    world_size: int
    batch_rows: int | None = None
    dtype: str = "fp32"
    capacity: bool = False
    hook: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # each setting: the file and key (or option) it came from
    content: bytes | None = field(default=None, repr=False)  # the data's bytes, read once: hashed and scored
    # a team that scores one stream in windows of seq_len inputs, each window's last target the next one's
    # first input (every token a target once), rather than in rows of seq_len+1 tokens of their own
    shifted: bool = False
    bos: bool = False  # each document begins with the tokenizer's BOS (before its tokens and the EOS after them)

    @property
    def data_sha256(self) -> str:
        """sha256 of the holdout bytes the loss is computed over (read now only for a plan made without them)."""
        return hashlib.sha256(self.content if self.content is not None else holdout_bytes(self.data)).hexdigest()


HOLDOUT_LIMIT = 1024**3  # a holdout set is an evaluation's tokens: tens of MB of text


def holdout_bytes(path: Path) -> bytes:
    """The holdout file's bytes, read once through the bounded reader (a FIFO or device refused at once, a
    file past HOLDOUT_LIMIT by its size); ZeroShotInputError naming it."""
    from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded

    try:
        return read_bounded(path, HOLDOUT_LIMIT, "holdout data", follow=True)
    except IrregularFileError as e:
        raise ZeroShotInputError(f"{e}: point --holdout-data at the run's holdout file") from e


# What each holdout setting may be (inclusive): a zero row length divides by zero, a negative batch makes no
# batch, and a value past these is no training's (a million-token row, a trillion-token evaluation).
HOLDOUT_RANGES = {
    "seq_len": (1, 2**20),
    "tokens": (1, 10**12),
    "batch_rows": (1, 2**16),
    "world_size": (1, 2**20),
}


def whole(value: Any, name: str, source: str) -> int:
    """A holdout setting as a whole number in its range (HOLDOUT_RANGES); ZeroShotInputError naming where it
    came from otherwise. A float is refused even when whole (`.inf`, `2048.5` would be a guess once cut)."""
    low, high = HOLDOUT_RANGES[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ZeroShotInputError(
            f"{source}: holdout {name} {value!r} is not a whole number from {low:,} to {high:,}: correct it, or "
            "run with --holdout off"
        )
    return value


def holdout_plan(run: Path, config: dict[str, Any], *, world_size: int | None, data: Path | None) -> HoldoutPlan:
    """The plan from the run's config.json; `data` (--holdout-data) replaces a path that does not resolve,
    `world_size` (--train-world-size, else the checkpoint's) the config's."""
    where = run / TRAINING_CONFIG
    try:
        seq_len = whole(config["data"]["seq_len"], "seq_len", f"{where} data.seq_len")
        tokens = whole(config["eval"]["tokens"], "tokens", f"{where} eval.tokens")
        named = Path(str(config["data"]["holdout"]))
    except (KeyError, TypeError) as e:
        raise ZeroShotInputError(
            f"{where}: no holdout settings ({e}): it needs data.holdout, data.seq_len and eval.tokens, "
            "or run with --holdout off"
        ) from e
    path = data if data is not None else (named if named.is_absolute() else run / named)
    if not path.is_file():
        how = "--holdout-data" if data is not None else f"{where}: data.holdout"
        raise ZeroShotInputError(f"{how} {path}: no such file: pass --holdout-data FILE, or --holdout off")
    world = world_size if world_size is not None else config.get("world_size")
    if isinstance(world, bool) or not isinstance(world, int) or not 1 <= world <= HOLDOUT_RANGES["world_size"][1]:
        raise ZeroShotInputError(
            f"{where}: no training world size (no shards, no source_world_size, no world_size): "
            "pass --train-world-size N"
        )
    if tokens < seq_len * world:
        raise ZeroShotInputError(f"{where}: eval.tokens {tokens} is less than one row per rank ({seq_len} x {world})")
    path = path.resolve()
    return HoldoutPlan(data=path, seq_len=seq_len, tokens=tokens, world_size=world, content=holdout_bytes(path))
