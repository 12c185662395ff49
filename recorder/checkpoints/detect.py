"""Which checkpoint format a directory holds, detected from its files (never from its name alone).

- `recorder`: the recorder's own `step_NNNNNNN/` (model.safetensors whose metadata holds weight_update_ns,
  config.json, tokenizer.json);
- `hf-safetensors`: config.json and safetensors weights, in the directory or where NeMo-RL keeps them;
- `torch-dcp`: `.metadata` and `*.distcp` shards: the recorder's sharded `step_NNNNNNN/`, an FSDP2
  `fsdp2_epoch_N/` archive (`final_meta.json` names its `source` run) or a `<run>/snapshots/step_N/`;
- `mcore-torch-dist`: NeMo-RL's Megatron checkpoint, `step_N/policy/weights/iter_*/` (DCP shards with
  Megatron's names) and `training_info.json`. NeMo-RL's Megatron worker writes neither the Hugging Face
  config nor the tokenizer: they are those of the base model its `config.yaml` names (`policy.model_name`,
  `policy.tokenizer.name`), found as a local directory or in the Hugging Face cache (offline), or given with
  `--model-config DIR` and `--tokenizer DIR` (a ModelSource). Without a config the shards can still be
  hashed; building the model then fails naming what to pass.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recorder.checkpoints.formats import ReaderName
from recorder.checkpoints.torch_dcp.fsdp2_layout import META_FILES, TeamLayoutError, dcp_meta, step_of
from recorder.user_paths import user_path
from trainer.policy.errors import CheckpointError

DCP_METADATA = ".metadata"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
_RANK_SHARD = re.compile(r"__(\d+)_0\.distcp")
_ITERATION = re.compile(r"iter_0*(\d+)")  # a Megatron-Core iteration folder given itself


@dataclass(frozen=True, slots=True)
class ModelSource:
    """Where the Hugging Face config and the tokenizer of checkpoints that hold neither are (`--model-config
    DIR`, `--tokenizer DIR`): each a directory as `save_pretrained` leaves it. What the checkpoint holds wins."""

    config: Path | None = None
    tokenizer: Path | None = None

    def __post_init__(self) -> None:
        for what, where in (("--model-config", self.config), ("--tokenizer", self.tokenizer)):
            if where is not None and not Path(where).is_dir():
                raise CheckpointError(f"{what} {where}: no such directory")
        if self.config is not None and not (Path(self.config) / "config.json").is_file():
            raise CheckpointError(f"--model-config {self.config}: no config.json in it")

    @classmethod
    def of(cls, config: str | Path | None, tokenizer: str | Path | None) -> ModelSource | None:
        """None when neither is given."""
        if config is None and tokenizer is None:
            return None
        return cls(Path(config) if config else None, Path(tokenizer) if tokenizer else None)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointInfo:
    """What a checkpoint directory holds, as its files say."""

    path: Path
    format: ReaderName  # the reader that recognised it (recorder.checkpoints.readers)
    step: int | None
    world_size: int | None  # ranks that wrote it: `__R_0.distcp` files, or the meta's source_world_size
    source_run: Path | None  # the run an archive or snapshot belongs to
    config: dict[str, Any] = field(default_factory=dict)  # the model's config.json
    tokenizer_dir: Path | None = None
    weights_dir: Path = Path()  # the directory whose files the manifest covers
    model_name: str | None = None  # the base model a NeMo-RL config.yaml names (policy.model_name)
    config_file: Path | None = None  # where `config` was read from (None: a meta's config object)
    read_files: tuple[Path, ...] = ()  # other files detection read that decide what is loaded (config.yaml)
    # iteration folders beside the one that holds the checkpoint (an older save's, a copy): never read
    passed_over: tuple[Path, ...] = ()
    state_key: str | None = None  # a torch.save file: the entry of its dict that holds the model's state dict

    def companion_files(self) -> list[Path]:
        """The files besides the weights that loading reads: a NeMo-RL step's config.yaml (it names the base
        model whose config and tokenizer are used), the config.json and the regular files of the tokenizer's
        directory (the Hugging Face tokenizer reads any of them)."""
        found = [*self.read_files, *([self.config_file] if self.config_file is not None else [])]
        if self.tokenizer_dir is not None:  # the shards beside it are the manifest's already
            found += sorted(
                p
                for p in self.tokenizer_dir.iterdir()
                if p.is_file() and p.suffix != ".distcp" and p.name != DCP_METADATA
            )
        return list(dict.fromkeys(found))


def detect_mcore(path: Path, source: ModelSource | None = None) -> CheckpointInfo | None:
    """NeMo-RL's Megatron checkpoint: `policy/weights/iter_*/` torch_dist beside `training_info.json`;
    `source`: the config and tokenizer of one that holds neither."""
    if not ((path / "policy" / "weights").is_dir() and (path / "training_info.json").is_file()):
        return None
    from recorder.checkpoints.megatron.megatron_saves import IterationChoiceError, choose_iteration

    try:  # of several iteration folders, the one the writer recorded: never the first in sort order
        chosen = choose_iteration(path / "policy" / "weights", *_training_info(path))
    except IterationChoiceError as e:
        raise CheckpointError(str(e)) from e
    if chosen is None or not (chosen.folder / DCP_METADATA).is_file():
        return None
    return _mcore(path, chosen.folder, source or ModelSource(), chosen.passed_over)


def _training_info(path: Path) -> tuple[dict[str, Any], Path]:
    return _json(path / "training_info.json"), path / "training_info.json"


def detect_dcp(path: Path) -> CheckpointInfo | None:
    """A torch distributed checkpoint: `.metadata` beside its `*.distcp` shards."""
    return _dcp(path) if (path / DCP_METADATA).is_file() else None


def detect_recorder(path: Path) -> CheckpointInfo | None:
    """The recorder's own `step_NNNNNNN/`: model.safetensors whose metadata holds its weight-update time."""
    if not ((path / "model.safetensors").is_file() and (path / "config.json").is_file()):
        return None
    from recorder.checkpoints.hugging_face.safetensors_header import HeaderError, read_header

    try:
        own = "weight_update_ns" in read_header(path / "model.safetensors").metadata
    except HeaderError as e:
        raise CheckpointError(str(e)) from e
    if not own:
        return None
    return CheckpointInfo(
        path=path,
        format="recorder",
        step=_step(path.name),
        world_size=None,
        source_run=_run_of(path),
        config=_json(path / "config.json"),
        tokenizer_dir=path,
        weights_dir=path,
    )


def detect_hf(path: Path) -> CheckpointInfo | None:
    """Any Hugging Face causal LM directory: config.json and safetensors weights, where NeMo-RL keeps them too."""
    from recorder.checkpoints.hugging_face.hf_checkpoint import MODEL_PLACES, find_dirs

    if not any((path / place / "config.json").is_file() for place in MODEL_PLACES):
        return None
    dirs = find_dirs(path)  # a Hugging Face directory: CheckpointError naming what it lacks
    return CheckpointInfo(
        path=path,
        format="hf-safetensors",
        step=_step(path.name),
        world_size=None,
        source_run=None,
        config=_json(dirs.model / "config.json"),
        tokenizer_dir=dirs.tokenizer,
        weights_dir=dirs.model,
    )


def detect_safetensors(path: Path) -> CheckpointInfo | None:
    """Safetensors weights with no config.json (a team's epoch directory: `model.safetensors` and its own meta
    file): the model's config is the team's, named by its declaration."""
    if any(path.glob("config.json")) or not any(path.glob("*.safetensors")):
        return None
    run = path.parent
    return CheckpointInfo(
        path=path, format="safetensors-dir", step=_step(path.name), world_size=None, source_run=None, config={},
        tokenizer_dir=tokenizer_dir_in([path, path / "tokenizer", run, run / "tokenizer"]), weights_dir=path,
    )  # fmt: skip


def _dcp(path: Path) -> CheckpointInfo:
    try:  # the FSDP2 layout's meta files, read by its one parser (recorder.checkpoints.torch_dcp.fsdp2_layout)
        _, meta = dcp_meta(path)
    except TeamLayoutError as e:
        raise CheckpointError(str(e)) from e
    source = meta.get("source")
    if isinstance(source, str) and source:
        run: Path | None = Path(source) if Path(source).is_absolute() else (path.parent / source)
    elif path.parent.name == "snapshots":
        run = path.parent.parent
    else:
        run = _run_of(path)
    places = [path, *([run, run / "model"] if run is not None else [])]
    config_file = next((p / "config.json" for p in places if (p / "config.json").is_file()), None)
    config = _json(config_file) if config_file else meta.get("config") or meta.get("model_config")
    if not isinstance(config, dict) or not config:
        raise CheckpointError(
            f"{path}: a torch DCP checkpoint without a model config: expected config.json in "
            f"{', '.join(str(p) for p in places)} or a 'config' object in {' or '.join(META_FILES)}"
        )
    step = meta.get("step")
    world = meta.get("source_world_size")
    return CheckpointInfo(
        path=path,
        format="torch-dcp",
        step=step if isinstance(step, int) and not isinstance(step, bool) else _step(path.name),
        world_size=world if isinstance(world, int) and not isinstance(world, bool) else _ranks(path),
        source_run=run,
        config=config,
        tokenizer_dir=_tokenizer_dir([path, path / "tokenizer", *([run, run / "tokenizer"] if run else [])]),
        weights_dir=path,
        config_file=config_file,
    )


def _mcore(path: Path, iteration: Path, source: ModelSource, passed_over: tuple[Path, ...]) -> CheckpointInfo:
    weights = path / "policy" / "weights"
    nemo = _nemo_config(path)
    policy = _section(nemo, "policy")
    model_name = policy.get("model_name") if isinstance(policy.get("model_name"), str) else None
    tok = _section(policy, "tokenizer")
    tokenizer_name = tok.get("name") if isinstance(tok.get("name"), str) else model_name
    places = [weights, iteration, path / "policy" / "tokenizer", path / "policy"]
    config_dir = next((p for p in places if (p / "config.json").is_file()), None)
    config_dir = config_dir or source.config or _base_model_dir(model_name, "config.json")
    info = _json(path / "training_info.json")
    step = info.get("current_step")
    tokenizer = _tokenizer_dir([path / "policy" / "tokenizer", path / "tokenizer", weights])
    if tokenizer is None:
        tokenizer = source.tokenizer or _base_model_dir(tokenizer_name, *TOKENIZER_FILES)
    return CheckpointInfo(
        path=path,
        format="mcore-torch-dist",
        step=step if isinstance(step, int) and not isinstance(step, bool) else _step(path.name),
        world_size=_ranks(iteration),
        source_run=None,
        config=_json(config_dir / "config.json") if config_dir is not None else {},
        tokenizer_dir=tokenizer,
        weights_dir=weights,
        model_name=model_name,
        config_file=config_dir / "config.json" if config_dir is not None else None,
        read_files=(path / "config.yaml",) if (path / "config.yaml").is_file() else (),
        passed_over=passed_over,
    )


def require_config(info: CheckpointInfo) -> dict[str, Any]:
    """`info.config`; CheckpointError saying where it was looked for when the checkpoint has none."""
    if info.config:
        return info.config
    named = f"config.yaml names policy.model_name {info.model_name!r}, " if info.model_name else ""
    raise CheckpointError(
        f"{info.path}: Megatron-Core weights without the Hugging Face config they map to (NeMo-RL does not "
        f"save it): {named}not found as a local directory or in the Hugging Face cache: pass --model-config DIR "
        "(the base model's directory with its config.json)"
    )


def _section(config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key)
    return value if isinstance(value, dict) else {}


def _nemo_config(path: Path) -> dict[str, Any]:
    """The step's NeMo-RL config.yaml ({} where there is none or it is not a mapping)."""
    import yaml

    try:
        doc = yaml.safe_load((path / "config.yaml").read_text())
    except FileNotFoundError:
        return {}
    except (OSError, yaml.YAMLError) as e:
        raise CheckpointError(f"{path / 'config.yaml'}: not a readable YAML file ({e})") from e
    return doc if isinstance(doc, dict) else {}


def _base_model_dir(name: str | None, *files: str) -> Path | None:
    """The directory holding one of `files` for the base model `name`: `name` itself when it is a local
    directory (NeMo-RL accepts one), else its newest snapshot in the Hugging Face cache. Never the network."""
    if not name:
        return None
    local = user_path(name)
    candidates = [local] if local.is_dir() else []
    if "/" in name and not local.is_absolute():
        home = Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface")
        hub = Path(os.environ.get("HF_HUB_CACHE") or home / "hub")
        snapshots = hub / ("models--" + name.replace("/", "--")) / "snapshots"
        if snapshots.is_dir():
            candidates += sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
    return next((c for c in candidates if any((c / f).is_file() for f in files)), None)


def _json(path: Path) -> dict[str, Any]:
    from recorder.untrusted.untrusted_files import IrregularFileError, read_json

    try:  # bounded and regular (a Hugging Face cache links its config.json: followed, a loop named)
        doc = read_json(path, follow=True)
    except FileNotFoundError as e:
        raise CheckpointError(f"{path}: missing") from e
    except IrregularFileError as e:
        raise CheckpointError(str(e)) from e
    if not isinstance(doc, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    return doc


def _step(name: str) -> int | None:
    m = _ITERATION.fullmatch(name)
    return int(m.group(1)) if m else step_of(name)


def _ranks(path: Path) -> int | None:
    return sum(1 for p in path.iterdir() if _RANK_SHARD.fullmatch(p.name)) or None


def _run_of(path: Path) -> Path | None:
    """The run directory of a checkpoint under `<run>/checkpoints/`."""
    return path.parent.parent if path.parent.name == "checkpoints" else None


def tokenizer_dir_in(places: list[Path]) -> Path | None:
    """The first of `places` holding tokenizer files."""
    return _tokenizer_dir(places)


def _tokenizer_dir(places: list[Path]) -> Path | None:
    return next((p for p in places if any((p / f).is_file() for f in TOKENIZER_FILES)), None)
