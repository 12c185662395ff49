"""Which format a checkpoint directory is in, read from its files (never from its name alone).

- "hf-safetensors": config.json and safetensors weights (trainer/policy/hf_checkpoint.py's layouts);
- "recorder": the policy's own checkpoint (weights.safetensors with the trainer's metadata);
- "torch-dcp": `.metadata` and `__<rank>_0.distcp` shards as torch.distributed.checkpoint writes them. Its
  run is the directory itself, the `<run>` of `<run>/snapshots/step_N/`, or the `source` an archive's
  `final_meta.json` names; its step and training world size come from `meta.json`/`final_meta.json`
  (`step`, `source_world_size`), else the `step_N` name and the number of shards;
- "mcore-torch-dist": NeMo-RL's `policy/weights/iter_*/` (detected, loaded by its own loader).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from recorder.errors import InputError
from trainer.policy.errors import PolicyError

Format = Literal["hf-safetensors", "recorder", "torch-dcp", "mcore-torch-dist"]
DCP_METADATA = ".metadata"
SHARD = re.compile(r"__(\d+)_0\.distcp$")
STEP_DIR = re.compile(r"(?:step|iter)_0*(\d+)$")
META_FILES = ("final_meta.json", "meta.json")
TOKENIZER_PLACES = ("tokenizer", "policy/tokenizer", ".")


class NotACheckpointError(PolicyError, InputError):
    """A path that holds no checkpoint in any known format, or whose run cannot be found."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointInfo:
    """What a checkpoint directory is: format, step, the training's world size and run, config, tokenizer."""

    path: Path
    format: Format
    step: int | None
    world_size: int | None
    source_run: Path | None
    config: dict[str, Any] = field(default_factory=dict)
    tokenizer_dir: Path | None = None


def detect(path: Path | str) -> CheckpointInfo:
    """The CheckpointInfo of `path`; NotACheckpointError naming the path and what a checkpoint holds."""
    path = Path(path).resolve()
    if not path.is_dir():
        raise NotACheckpointError(f"{path}: no such directory: give a checkpoint directory, snapshot or archive")
    if (path / DCP_METADATA).is_file():
        return _dcp(path)
    if (path / "weights.safetensors").is_file() and (path / "metadata.json").is_file():
        return _plain(path, "recorder")
    if any((path / p / "config.json").is_file() for p in (".", "policy/weights", "policy/weights/model", "model")):
        return _plain(path, "hf-safetensors")
    if list(path.glob("policy/weights/iter_*/.metadata")):
        return _plain(path, "mcore-torch-dist")
    raise NotACheckpointError(
        f"{path}: not a checkpoint: no {DCP_METADATA} with __<rank>_0.distcp shards (torch DCP), no config.json "
        "with safetensors (Hugging Face), no weights.safetensors (recorder): give the directory that holds them"
    )


def _plain(path: Path, fmt: Format) -> CheckpointInfo:
    config = _json(path / "config.json") if (path / "config.json").is_file() else {}
    step = _step_of_name(path)
    return CheckpointInfo(
        path=path, format=fmt, step=step, world_size=None, source_run=None, config=config, tokenizer_dir=path
    )


def _dcp(path: Path) -> CheckpointInfo:
    meta_file = next((path / m for m in META_FILES if (path / m).is_file()), None)
    meta = _json(meta_file) if meta_file is not None else {}
    run = _source_run(path, meta, meta_file)
    shards = [p for p in path.iterdir() if SHARD.search(p.name)]
    if not shards:
        raise NotACheckpointError(f"{path}: {DCP_METADATA} but no __<rank>_0.distcp shard: the save is incomplete")
    world = meta.get("source_world_size", len(shards))
    step = meta.get("step", _step_of_name(path))
    config_file = next((d / "config.json" for d in (path, run) if (d / "config.json").is_file()), None)
    tokenizer = next(
        (d / p for d in (path, run) for p in TOKENIZER_PLACES if (d / p / "tokenizer.json").is_file()), None
    )
    return CheckpointInfo(
        path=path,
        format="torch-dcp",
        step=int(step) if step is not None else None,
        world_size=int(world),
        source_run=run,
        config=_json(config_file) if config_file is not None else {},
        tokenizer_dir=tokenizer,
    )


def _source_run(path: Path, meta: dict[str, Any], meta_file: Path | None) -> Path:
    """The training run this checkpoint came from: an archive's `source`, a snapshot's run, else itself."""
    if "source" in meta:
        source = Path(str(meta["source"]))
        source = source if source.is_absolute() else (path / source)
        if not source.is_dir():
            raise NotACheckpointError(
                f"{meta_file}: source {meta['source']!r} does not exist: restore the run directory there, "
                "or correct `source` to where the run now is"
            )
        return source.resolve()
    if path.parent.name == "snapshots" and STEP_DIR.search(path.name):
        return path.parent.parent
    return path


def _step_of_name(path: Path) -> int | None:
    m = STEP_DIR.search(path.name)
    return int(m.group(1)) if m else None


def _json(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise NotACheckpointError(f"{path}: not readable JSON ({e}): rewrite it or remove it") from e
    if not isinstance(obj, dict):
        raise NotACheckpointError(f"{path}: a JSON object was expected")
    return obj
