"""A team run's own settings, read from the files its training wrote (docs/zero-shot.md, "A team's run"),
under the key paths the team's declaration names (declaration.py), else these:

    all_config.yaml      model: {...}  the model's config, given to --model-factory as it is
                         data: {path, val_path}  training and holdout documents (one per line)
                         packing: {seq_len}  eval: {tokens, batch_rows}  train: {param_dtype}
    train_metadata.yaml  tokenizer: (or tokenizer_path:) a tokenizer.json file or a tokenizer directory

Each value's source (the file and key it came from, or the option or declaration) is kept with it, for
results.json: a value no file, option or declaration gives is refused, naming how to give it.

A relative path is taken from the config's directory, else the --model-code tree, else the working
directory (the team's repository root, where its training ran): the first where it exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.origin.declaration import HOLDOUT_KEYS, MODEL_KEY, TOKENIZER_KEYS, Declaration, lookup
from evaluator.zero_shot.origin.team_run import ALL_CONFIG, TRAIN_METADATA
from evaluator.zero_shot.origin.training_run import HoldoutPlan, holdout_bytes, whole
from recorder.user_paths import user_path

PARAM_DTYPES = {"bf16": "bf16", "bfloat16": "bf16", "fp32": "fp32", "float32": "fp32", "fp16": "fp16"}


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamConfig:
    """all_config.yaml and train_metadata.yaml of one run, and where relative paths in them are found."""

    directory: Path
    config: dict[str, Any]
    metadata: dict[str, Any]
    bases: tuple[Path, ...]
    declaration: Declaration = field(default_factory=Declaration)

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
        key = MODEL_KEY if self.declaration.model is None else self.declaration.model
        _, model = lookup(self.config, key)
        if not isinstance(model, dict) or not model:
            how = f"declared in {self.declaration.where}" if self.declaration.model else f"declare its key as {_MODEL}"
            raise ZeroShotInputError(
                f"{self.directory / ALL_CONFIG}: no `{key}:` section for the model factory ({how})"
            )
        return dict(model)

    def tokenizer(self, override: Path | None) -> tuple[Path, str]:
        """(the tokenizer file or directory, where it was named)."""
        if override is not None:
            if not override.exists():
                raise ZeroShotInputError(f"--tokenizer {override}: no such file or directory")
            return override.resolve(), "--tokenizer"
        declared = self.declaration.tokenizer
        keys = (declared,) if declared else TOKENIZER_KEYS
        found = {k: v for k in keys if (hit := lookup(self.metadata, k))[0] and (v := hit[1]) is not None}
        values = {str(v.get("path") if isinstance(v, dict) else v) for v in found.values()}
        where = self.directory / TRAIN_METADATA
        if len(values) > 1:
            raise ZeroShotInputError(
                f"{where}: {' and '.join(found)} name different tokenizers: declare which ({_TOKENIZER}) or pass "
                "--tokenizer"
            )
        if not found:
            raise ZeroShotInputError(
                f"{where}: no {' or '.join(keys)}: pass --tokenizer (EVAL_TOKENIZER_PATH) or declare its key "
                f"({_TOKENIZER})"
            )
        key, value = next(iter(found.items()))
        return self.path(
            value.get("path") if isinstance(value, dict) else value, "tokenizer"
        ), f"{TRAIN_METADATA} {key}"

    def max_length(self) -> tuple[int | None, str | None]:
        """(the positions the model takes, where that was said): the declared number or key path, else None."""
        declared = self.declaration.max_length
        if declared is None or isinstance(declared, int):
            return declared, None if declared is None else f"{self.declaration.where} max_length"
        found, value = lookup(self.config, declared)
        if not found or not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ZeroShotInputError(
                f"{self.directory / ALL_CONFIG}: no positive whole number at {declared} (declared as max_length in "
                f"{self.declaration.where})"
            )
        return value, f"{ALL_CONFIG} {declared}"


_MODEL = "[tool.recorder] model = 'KEY.PATH' in the model code's pyproject.toml"
_TOKENIZER = "[tool.recorder] tokenizer = 'KEY' in the model code's pyproject.toml"
_HOLDOUT = "[tool.recorder.holdout] {name} = 'KEY.PATH' (or the value) in the model code's pyproject.toml"


def read_team_config(directory: Path, *, model_code: Path | None, declaration: Declaration | None = None) -> TeamConfig:
    """The run's two YAML files; ZeroShotInputError naming the file that is missing or unreadable."""
    bases = tuple(dict.fromkeys([directory, *([model_code.resolve()] if model_code else []), Path.cwd()]))
    metadata = directory / TRAIN_METADATA
    return TeamConfig(
        directory=directory,
        config=_yaml(directory / ALL_CONFIG),
        metadata=_yaml(metadata) if metadata.is_file() else {},
        bases=bases,
        declaration=declaration or Declaration(),
    )


def team_holdout_plan(team: TeamConfig, *, world_size: int | None, data: Path | None, hook: str | None) -> HoldoutPlan:
    """How the team's training computed eval/loss, from all_config.yaml under the declared key paths (`data`
    replaces the holdout documents); each setting's source in the plan's `sources`."""
    where = team.directory / ALL_CONFIG
    sources: dict[str, str] = {}

    def setting(name: str) -> Any:
        value, sources[name] = _setting(team, name)
        return value

    def checked(name: str) -> int:  # named by the file's full path and key, or the declaration's entry
        value = setting(name)
        said = sources[name]
        return whole(value, name, str(team.directory / said) if said.startswith(ALL_CONFIG) else said)

    seq_len, tokens, batch_rows = (checked(n) for n in ("seq_len", "tokens", "batch_rows"))
    if data is not None:
        val, sources["val_path"] = data.resolve(), "--holdout-data"
    else:
        val = team.path(setting("val_path"), sources["val_path"].removeprefix(f"{ALL_CONFIG} "))
    if not val.is_file():
        raise ZeroShotInputError(f"{val}: the holdout data is no file: pass --holdout-data FILE, or --holdout off")
    if world_size is None or world_size < 1:
        raise ZeroShotInputError(
            f"{where}: no training world size (no __R_0.distcp shards, no source_world_size): pass --train-world-size N"
        )
    if tokens < seq_len * world_size:
        raise ZeroShotInputError(
            f"{where}: holdout tokens {tokens} is less than one row per rank ({seq_len} x {world_size})"
        )
    dtype = str(setting("param_dtype"))
    if dtype not in PARAM_DTYPES:
        raise ZeroShotInputError(
            f"{where}: param_dtype {dtype!r} ({sources['param_dtype']}): expected one of {', '.join(PARAM_DTYPES)}"
        )
    resolved = _with_path(team.config, team.declaration.holdout.get("val_path", HOLDOUT_KEYS["val_path"]), str(val))
    return HoldoutPlan(
        data=val, seq_len=seq_len, tokens=tokens, world_size=world_size, batch_rows=batch_rows,
        dtype=PARAM_DTYPES[dtype], capacity=True, hook=hook, config=resolved, sources=sources,
        content=holdout_bytes(val),
    )  # fmt: skip


def _setting(team: TeamConfig, name: str) -> tuple[Any, str]:
    """(a holdout setting's value, where it came from): the declared key path (or value), else the default key."""
    declared = team.declaration.holdout.get(name)
    literal = isinstance(declared, int) and not isinstance(declared, bool) and name != "val_path"
    if literal or (name == "param_dtype" and declared in PARAM_DTYPES):
        return declared, f"{team.declaration.where} holdout.{name}"
    if declared is not None and not isinstance(declared, str):
        raise ZeroShotInputError(
            f"{team.declaration.where}: holdout.{name} {declared!r}: a key path in {ALL_CONFIG}"
            + ("" if name == "val_path" else " or the value")
        )
    key = declared if isinstance(declared, str) else HOLDOUT_KEYS[name]
    found, value = lookup(team.config, key)
    if not found or value is None:
        how = (
            f"declared in {team.declaration.where}"
            if declared is not None
            else f"declare it: {_HOLDOUT.format(name=name)}"
        )
        raise ZeroShotInputError(
            f"{team.directory / ALL_CONFIG}: no holdout {name} at {key} ({how}), or run with --holdout off"
        )
    return value, f"{ALL_CONFIG} {key}"


def _with_path(config: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    """`config` with the key path set to `value` (the holdout file made absolute, for --holdout-fn)."""
    head, _, rest = key.partition(".")
    if not rest:
        return {**config, head: value}
    inner = config.get(head)
    return {**config, head: _with_path(inner if isinstance(inner, dict) else {}, rest, value)}


def _yaml(path: Path) -> dict[str, Any]:
    from recorder.untrusted.bounded_documents import read_yaml
    from recorder.untrusted.untrusted_files import IrregularFileError

    try:  # the bounded reader: regular files only (a FIFO or /dev/zero refused at once), bytes, nodes, depth
        doc = read_yaml(path, "YAML file", follow=True)
    except IrregularFileError as e:
        raise ZeroShotInputError(f"{e}: rewrite it") from e
    if not isinstance(doc, dict):
        raise ZeroShotInputError(f"{path}: expected a YAML mapping")
    return doc
