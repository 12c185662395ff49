"""A team run's own settings, read from the files its training wrote (docs/zero-shot.md, "A team's run"):

    all_config.yaml      model: {...}  the model's config, given to --model-factory as it is
                         data: {path, val_path}  training and holdout documents (one per line)
                         packing: {seq_len}  eval: {tokens, batch_rows}  train: {param_dtype}  (bf16 default)
    train_metadata.yaml  tokenizer: a tokenizer.json file or a tokenizer directory

A relative path is taken from the config's directory, else the --model-code tree, else the working
directory (the team's repository root, where its training ran): the first where it exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.team_run import ALL_CONFIG, TRAIN_METADATA
from evaluator.zero_shot.training_run import HoldoutPlan
from recorder.user_paths import user_path

PARAM_DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "fp32": "fp32", "float32": "fp32", "fp16": "fp16"}


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamConfig:
    """all_config.yaml and train_metadata.yaml of one run, and where relative paths in them are found."""

    directory: Path
    config: dict[str, Any]
    metadata: dict[str, Any]
    bases: tuple[Path, ...]

    def path(self, value: Any, name: str) -> Path:
        """The file or directory `name` (a dotted key) names; ZeroShotInputError naming the places tried."""
        where = self.directory / (TRAIN_METADATA if name == "tokenizer" else ALL_CONFIG)
        if not isinstance(value, str) or not value:
            raise ZeroShotInputError(f"{where}: no {name}: add it, or pass it as an option")
        named = user_path(value)
        places = [named] if named.is_absolute() else [base / named for base in self.bases]
        found = next((p for p in places if p.exists()), None)
        if found is None:
            tried = ", ".join(str(p) for p in places)
            raise ZeroShotInputError(f"{where}: {name} {value!r} not found (tried {tried}): pass --model-code ROOT")
        return found.resolve()

    def model(self) -> dict[str, Any]:
        model = self.config.get("model")
        if not isinstance(model, dict) or not model:
            raise ZeroShotInputError(f"{self.directory / ALL_CONFIG}: no `model:` section for the model factory")
        return dict(model)

    def tokenizer(self, override: Path | None) -> Path:
        if override is not None:
            if not override.exists():
                raise ZeroShotInputError(f"--tokenizer {override}: no such file or directory")
            return override.resolve()
        value = self.metadata.get("tokenizer")
        if isinstance(value, dict):
            value = value.get("path")
        return self.path(value, "tokenizer")


def read_team_config(directory: Path, *, model_code: Path | None) -> TeamConfig:
    """The run's two YAML files; ZeroShotInputError naming the file that is missing or unreadable."""
    bases = tuple(dict.fromkeys([directory, *([model_code.resolve()] if model_code else []), Path.cwd()]))
    metadata = directory / TRAIN_METADATA
    return TeamConfig(
        directory=directory,
        config=_yaml(directory / ALL_CONFIG),
        metadata=_yaml(metadata) if metadata.is_file() else {},
        bases=bases,
    )


def team_holdout_plan(team: TeamConfig, *, world_size: int | None, data: Path | None, hook: str | None) -> HoldoutPlan:
    """How the team's training computed eval/loss, from all_config.yaml (`data` replaces data.val_path)."""
    where = team.directory / ALL_CONFIG
    c = team.config
    try:
        seq_len = int(c["packing"]["seq_len"])
        tokens = int(c["eval"]["tokens"])
        batch_rows = int(c["eval"]["batch_rows"])
    except (KeyError, TypeError, ValueError) as e:
        raise ZeroShotInputError(
            f"{where}: no holdout settings ({type(e).__name__}: {e}): it needs packing.seq_len, eval.tokens and "
            "eval.batch_rows, or run with --holdout off"
        ) from e
    val = data.resolve() if data is not None else team.path((c.get("data") or {}).get("val_path"), "data.val_path")
    if not val.is_file():
        raise ZeroShotInputError(f"{val}: the holdout data is no file: pass --holdout-data FILE, or --holdout off")
    if world_size is None or world_size < 1:
        raise ZeroShotInputError(
            f"{where}: no training world size (no __R_0.distcp shards, no source_world_size): pass --train-world-size N"
        )
    if tokens < seq_len * world_size:
        raise ZeroShotInputError(
            f"{where}: eval.tokens {tokens} is less than one row per rank ({seq_len} x {world_size})"
        )
    dtype = str((c.get("train") or {}).get("param_dtype", "bf16"))
    if dtype not in PARAM_DTYPES:
        raise ZeroShotInputError(f"{where}: train.param_dtype {dtype!r}: expected one of {', '.join(PARAM_DTYPES)}")
    resolved = {**c, "data": {**(c.get("data") or {}), "val_path": str(val)}}
    return HoldoutPlan(
        data=val, seq_len=seq_len, tokens=tokens, world_size=world_size, batch_rows=batch_rows,
        dtype=PARAM_DTYPES[dtype], capacity=True, hook=hook, config=resolved,
    )  # fmt: skip


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    from recorder.untrusted_files import JSON_LIMIT, IrregularFileError, read_bounded

    try:  # bounded, regular files only: a FIFO or /dev/zero is refused
        doc = yaml.safe_load(read_bounded(path, JSON_LIMIT, "YAML file", follow=True))
    except (OSError, IrregularFileError, yaml.YAMLError) as e:
        raise ZeroShotInputError(f"{path}: not a readable YAML file ({e}): rewrite it") from e
    if not isinstance(doc, dict):
        raise ZeroShotInputError(f"{path}: expected a YAML mapping")
    return doc
