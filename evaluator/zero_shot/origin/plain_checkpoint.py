"""A checkpoint outside the team layouts (a directory of safetensors weights, a `torch.save` file, a Hugging
Face directory) with what its team's files say about it, under the names its declaration gives
(docs/zero-shot.md, "A checkpoint of any layout"):

    config_file   the run's config (JSON, YAML or TOML), looked up beside the weights, then in the directory
                  above them (the run's); `model` its model section, `max_length` and `tokenizer` key paths in it
    step_file     the meta file beside the weights, `step_key` the step's key in it (a torch.save file: the
                  step's key in the saved dict)
    state_key     a torch.save file: the entry of its dict that holds the model's state dict

Each value's source goes to results.json. A value the files do not hold is refused with one line naming the
entry to declare, before the weights are read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.origin.declaration import MODEL_KEY, Declaration, lookup
from recorder.checkpoints.detect import CheckpointInfo
from recorder.checkpoints.torch_dcp.fsdp2_layout import STEP_KEYS, meta_int, read_meta
from recorder.user_paths import user_path

DECLARE = "in the model code's pyproject.toml [tool.recorder]"


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainCheckpoint:
    """The checkpoint's info with the model's config, step and state-dict entry filled in; its tokenizer and
    positions; where each came from."""

    info: CheckpointInfo
    tokenizer: Path | None
    max_length: int | None
    config: dict[str, Any] = field(default_factory=dict)  # the whole config file ({}: none declared)
    config_file: Path | None = None
    sources: dict[str, str] = field(default_factory=dict)


def plain_checkpoint(
    info: CheckpointInfo, declaration: Declaration, *, tokenizer: Path | None, root: Path | None
) -> PlainCheckpoint:
    """What the declaration and the team's files say of `info`; ZeroShotInputError naming what to declare."""
    sources: dict[str, str] = {}
    config_file = _config_file(info, declaration)
    config = _read_config(config_file) if config_file is not None else {}
    if config_file is not None:
        key = MODEL_KEY if declaration.model is None else declaration.model
        found, model = lookup(config, key)
        if not found or not isinstance(model, dict) or not model:
            raise ZeroShotInputError(
                f"{config_file}: no `{key}` section for the model factory: declare its key path, model = 'KEY.PATH' "
                f"{DECLARE} ('' for the whole file)"
            )
        info, sources["config"] = replace(info, config=dict(model)), f"{config_file} {key or '(the whole file)'}"
    elif not info.config:
        raise ZeroShotInputError(
            f"{info.path}: no model config beside the weights: declare the run's config file, config_file = "
            f"'NAME' {DECLARE} (JSON, YAML or TOML; looked up beside the weights, then in the directory above)"
        )
    bases = tuple(dict.fromkeys(p for p in (config_file.parent if config_file else None, _home(info), info.path.parent,
                                            root, Path.cwd()) if p is not None))  # fmt: skip
    named, sources["tokenizer"] = _tokenizer(info, declaration, config, config_file, tokenizer, bases)
    positions = _max_length(declaration, config, config_file, sources)
    info = _step(info, declaration, sources)
    return PlainCheckpoint(
        info=info, tokenizer=named, max_length=positions, config=config, config_file=config_file, sources=sources
    )


def _home(info: CheckpointInfo) -> Path:
    """The directory the weights are in (a torch.save file's directory)."""
    return info.path if info.path.is_dir() else info.path.parent


def _config_file(info: CheckpointInfo, declaration: Declaration) -> Path | None:
    name = declaration.config_file
    if name is None:
        return None
    named = user_path(name)
    places = [named] if named.is_absolute() else [_home(info) / named, _home(info).parent / named]
    found = next((p for p in places if p.is_file()), None)
    if found is None:
        raise ZeroShotInputError(
            f"{declaration.where}: config_file {name!r} not found (tried {', '.join(map(str, places))})"
        )
    return found.resolve()


def _read_config(path: Path) -> dict[str, Any]:
    """A JSON, YAML or TOML config file as a mapping; ZeroShotInputError naming it otherwise."""
    import json
    import tomllib

    import yaml

    from recorder.untrusted.untrusted_files import JSON_LIMIT, IrregularFileError, read_bounded

    suffix = path.suffix.lower()
    try:
        text = read_bounded(path, JSON_LIMIT, "config file", follow=True).decode("utf-8")
        if suffix == ".toml":
            doc = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            doc = yaml.safe_load(text)
        elif suffix == ".json":
            doc = json.loads(text)
        else:
            raise ZeroShotInputError(f"{path}: a config file is .json, .yaml, .yml or .toml")
    except (OSError, IrregularFileError, UnicodeDecodeError, ValueError, yaml.YAMLError) as e:
        raise ZeroShotInputError(f"{path}: not a readable {suffix.lstrip('.').upper()} file ({e}): correct it") from e
    if not isinstance(doc, dict):
        raise ZeroShotInputError(f"{path}: expected a mapping at the top")
    return doc


def _tokenizer(
    info: CheckpointInfo,
    declaration: Declaration,
    config: dict[str, Any],
    config_file: Path | None,
    option: Path | None,
    bases: tuple[Path, ...],
) -> tuple[Path | None, str]:
    """(the tokenizer file or directory, where it was named): --tokenizer, the declared key of the config file,
    else the checkpoint's own tokenizer files."""
    if option is not None:
        if not option.exists():
            raise ZeroShotInputError(f"--tokenizer {option}: no such file or directory")
        return option.resolve(), "--tokenizer"
    key = declaration.tokenizer
    if key is not None and config_file is not None:
        found, value = lookup(config, key)
        if not found or not isinstance(value, str) or not value:
            raise ZeroShotInputError(f"{config_file}: no tokenizer path at {key} (declared as tokenizer {DECLARE})")
        named = user_path(value)
        places = [named] if named.is_absolute() else [b / named for b in bases]
        hit = next((p for p in places if p.exists()), None)
        if hit is None:
            raise ZeroShotInputError(
                f"{config_file}: tokenizer {value!r} ({key}) not found (tried {', '.join(map(str, places))}): pass "
                "--tokenizer FILE|DIR (EVAL_TOKENIZER_PATH)"
            )
        return hit.resolve(), f"{config_file} {key}"
    if info.tokenizer_dir is not None:
        return None, f"the checkpoint's {info.tokenizer_dir}"
    raise ZeroShotInputError(
        f"{info.path}: no tokenizer files beside the weights: pass --tokenizer FILE|DIR (EVAL_TOKENIZER_PATH), or "
        f"declare the key naming it in the config file, tokenizer = 'KEY.PATH' {DECLARE}"
    )


def _max_length(
    declaration: Declaration, config: dict[str, Any], config_file: Path | None, sources: dict[str, str]
) -> int | None:
    declared = declaration.max_length
    if declared is None:
        return None
    if isinstance(declared, int):
        sources["max_length"] = f"{declaration.where} max_length"
        return declared
    found, value = lookup(config, declared) if config_file is not None else (False, None)
    if not found or not isinstance(value, int) or isinstance(value, bool) or value < 1:
        where = config_file if config_file is not None else declaration.where
        raise ZeroShotInputError(
            f"{where}: no positive whole number at {declared} (declared as max_length {DECLARE}; a key path "
            "in config_file, or the number)"
        )
    sources["max_length"] = f"{config_file} {declared}"
    return value


def _step(info: CheckpointInfo, declaration: Declaration, sources: dict[str, str]) -> CheckpointInfo:
    """`info` with its step (the declared meta file's, the torch.save dict's, else the directory name's) and,
    for a torch.save file, the entry holding its state dict (checked now, its tensors unread)."""
    keys = (declaration.step_key,) if declaration.step_key else STEP_KEYS
    if info.path.is_file():  # a torch.save file: the only checkpoint that is one file
        return _saved_step(info, declaration, keys, sources)
    if declaration.step_file is not None:
        file = _home(info) / declaration.step_file
        if not file.is_file():
            raise ZeroShotInputError(f"{file}: no such file (step_file {DECLARE}.layout)")
        step, key = _keyed(read_meta(file), keys, file)
        sources["step"] = f"{file.name} {key}"
        return replace(info, step=step)
    return info


def _saved_step(
    info: CheckpointInfo, declaration: Declaration, keys: tuple[str, ...], sources: dict[str, str]
) -> CheckpointInfo:
    from recorder.checkpoints.torch_save_file import saved_entries, state_dict_of
    from trainer.policy.errors import CheckpointError

    try:
        saved = saved_entries(info.path)
        state_dict_of(saved, declaration.state_key, info.path)
    except CheckpointError as e:
        raise ZeroShotInputError(str(e)) from e
    info = replace(info, state_key=declaration.state_key)
    if not any(k in saved for k in keys):
        sources["step"] = "none"
        return info
    step, key = _keyed(saved, keys, info.path)
    sources["step"] = f"{info.path.name} entry {key}"
    return replace(info, step=step)


def _keyed(meta: dict[str, Any], keys: tuple[str, ...], file: Path) -> tuple[int, str]:
    """(the step under one of `keys`, the key); ZeroShotInputError when none holds a whole number, or two
    disagree."""
    values = {k: v for k in keys if (v := meta_int(meta, k)) is not None}
    if len(set(values.values())) > 1:
        said = ", ".join(f"{k} {v}" for k, v in values.items())
        raise ZeroShotInputError(f"{file}: {said}: declare which is the step, [tool.recorder.layout] step_key")
    if not values:
        raise ZeroShotInputError(
            f"{file}: no whole-number step under {' or '.join(keys)}: declare its key, [tool.recorder.layout] "
            "step_key = 'KEY' in the model code's pyproject.toml"
        )
    key, value = next(iter(values.items()))
    return value, key
