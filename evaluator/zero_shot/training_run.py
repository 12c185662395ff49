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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.zero_shot.errors import ZeroShotInputError
from recorder.team_layout import PLAIN_RUN_CONFIG

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
    # a team that scores one stream in windows of seq_len inputs, each window's last target the next one's
    # first input (every token a target once), rather than in rows of seq_len+1 tokens of their own
    shifted: bool = False
    bos: bool = False  # each document begins with the tokenizer's BOS (before its tokens and the EOS after them)


def holdout_plan(run: Path, config: dict[str, Any], *, world_size: int | None, data: Path | None) -> HoldoutPlan:
    """The plan from the run's config.json; `data` (--holdout-data) replaces a path that does not resolve,
    `world_size` (--train-world-size, else the checkpoint's) the config's."""
    where = run / TRAINING_CONFIG
    try:
        seq_len = int(config["data"]["seq_len"])
        tokens = int(config["eval"]["tokens"])
        named = Path(str(config["data"]["holdout"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ZeroShotInputError(
            f"{where}: no holdout settings ({e}): it needs data.holdout, data.seq_len and eval.tokens, "
            "or run with --holdout off"
        ) from e
    path = data if data is not None else (named if named.is_absolute() else run / named)
    if not path.is_file():
        how = "--holdout-data" if data is not None else f"{where}: data.holdout"
        raise ZeroShotInputError(f"{how} {path}: no such file: pass --holdout-data FILE, or --holdout off")
    world = world_size if world_size is not None else config.get("world_size")
    if not isinstance(world, int) or world < 1:
        raise ZeroShotInputError(
            f"{where}: no training world size (no shards, no source_world_size, no world_size): "
            "pass --train-world-size N"
        )
    if seq_len < 1 or tokens < seq_len * world:
        raise ZeroShotInputError(f"{where}: eval.tokens {tokens} is less than one row per rank ({seq_len} x {world})")
    return HoldoutPlan(data=path.resolve(), seq_len=seq_len, tokens=tokens, world_size=world)
