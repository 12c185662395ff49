"""The checkpoint readers, one row each: how a directory is recognised, which files its manifest covers, and how
its state dict is read with every shard hashed on the way.

Each row is a format plugin's reader (`recorder.checkpoints.formats.FormatPlugin.reader` names it as
"module:attr"): `detect` asks them in the plugins' order, the most specific layout first (a NeMo-RL Megatron
step holds more than a plain DCP directory; the recorder's own safetensors is a Hugging Face directory with
its weight-update time), and the Hugging Face reader last (its plugin asks it last): any directory with a
config.json is one, and it names what it lacks. A new on-disk format is its reader's functions and row beside
its plugin. Nothing outside the table asks a reader's name: what differs per reader is a field of its row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recorder.checkpoints import load
from recorder.checkpoints.detect import (
    CheckpointInfo,
    ModelSource,
    detect_dcp,
    detect_hf,
    detect_mcore,
    detect_recorder,
    detect_safetensors,
)
from recorder.checkpoints.formats import ReaderName, ordered
from recorder.checkpoints.manifest import Manifest, ShardDigest
from recorder.checkpoints.torch_save_file import detect_torch_save, read_torch_save, torch_save_files
from recorder.plugin_registry import resolve
from trainer.policy.errors import CheckpointError

if TYPE_CHECKING:
    import torch

ReadStateDict = Callable[
    [CheckpointInfo, list[Path], Manifest | None, "torch.dtype", int | None],
    tuple[dict[str, Any], tuple[ShardDigest, ...]],
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Reader:
    """One checkpoint format as this evaluator reads it."""

    name: ReaderName
    expects: str  # what a directory of it holds, as an error names it
    detect: Callable[..., CheckpointInfo | None]  # (path[, source]) -> its info; None: not this format
    shard_files: Callable[[CheckpointInfo], list[Path]]
    read: ReadStateDict  # (state dict, digests of every file read)
    sharded: bool  # its manifest (many shards, hashed while read) is what an import records
    takes_source: bool = False  # its checkpoints may lack config and tokenizer: detect takes a ModelSource
    left_out: Callable[[CheckpointInfo], list[Path]] = load.none_left_out  # shard files its listing names not
    lacks_tokenizer: str = ""  # why its checkpoints hold no tokenizer (the base model's is looked for): errors say
    run_step: bool = False  # a step directory of a recorder run: scored as that run's step (zero-shot)


MCORE = Reader(
    name="mcore-torch-dist",
    expects="policy/weights/iter_*/ with training_info.json (Megatron-Core torch_dist)",
    detect=detect_mcore,
    shard_files=load.every_file,
    read=load.read_mcore,
    sharded=True,
    takes_source=True,
    left_out=load.every_file_left_out,
    lacks_tokenizer="NeMo-RL's Megatron checkpoints hold none",
)
TORCH_DCP = Reader(
    name="torch-dcp",
    expects=".metadata with *.distcp (torch DCP)",
    detect=detect_dcp,
    shard_files=load.dcp_files,
    read=load.read_dcp,
    sharded=True,
    left_out=load.dcp_left_out,
)
RECORDER = Reader(
    name="recorder",
    expects="model.safetensors recording its weight-update time (a recorder checkpoint)",
    detect=detect_recorder,
    shard_files=load.safetensors_file,
    read=load.read_safetensors,
    sharded=False,
    run_step=True,
)
SAFETENSORS_DIR = Reader(
    name="safetensors-dir",
    expects="*.safetensors without config.json (a team's weights: its declaration names the config)",
    detect=detect_safetensors,
    shard_files=load.safetensors_files,
    read=load.read_safetensors,
    sharded=False,
)
TORCH_SAVE = Reader(
    name="torch-save",
    expects="a torch.save file (.pt, .pth, .ckpt, .bin)",
    detect=detect_torch_save,
    shard_files=torch_save_files,
    read=read_torch_save,
    sharded=False,
)
HUGGING_FACE = Reader(
    name="hf-safetensors",
    expects="config.json with *.safetensors (Hugging Face)",
    detect=detect_hf,
    shard_files=load.hf_files,
    read=load.read_safetensors,
    sharded=False,
)


def all_readers() -> tuple[Reader, ...]:
    """Every plugin's reader, in the order detection asks them (recorder.checkpoints.formats.ordered)."""
    plugins = ordered("reader")
    return tuple(resolve(p.reader, Reader, f"checkpoint format {p.name}") for p in plugins if p.reader is not None)


def detect(path: Path, source: ModelSource | None = None) -> CheckpointInfo:
    """The format of the checkpoint at `path`, as the first reader that recognises it says (`all_readers`,
    most specific layout first); CheckpointError naming the path and what each reader expects. `source`: the
    config and tokenizer of a checkpoint that holds neither (a NeMo-RL Megatron step)."""
    path = Path(path)
    if not path.is_dir() and not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint directory or file")
    rows = all_readers()
    for row in rows:
        info = row.detect(path, source) if row.takes_source else row.detect(path)
        if info is not None:
            return info
    raise CheckpointError(
        f"{path}: not a checkpoint this evaluator reads: expected " + ", or ".join(row.expects for row in rows)
    )


def reader(name: ReaderName) -> Reader:
    """The reader detection named."""
    return next(r for r in all_readers() if r.name == name)


def left_out(info: CheckpointInfo) -> list[Path]:
    """The shard files in `info`'s checkpoint that its listing does not name: never read, hashed or in the
    manifest."""
    return reader(info.format).left_out(info)


def shard_files(info: CheckpointInfo) -> list[Path]:
    """The files a checkpoint's manifest covers, relative paths taken from `info.weights_dir`."""
    return reader(info.format).shard_files(info)


def load_state_dict(
    info: CheckpointInfo, *, dtype: torch.dtype | str, expected: Manifest | None = None, threads: int | None = None
) -> tuple[dict[str, torch.Tensor], Manifest]:
    """(the model's state dict, floating tensors in `dtype`, the manifest of the shards read)."""
    files = shard_files(info)
    load.check_listing(info, files, expected)
    state, digests = reader(info.format).read(info, files, expected, load.torch_dtype(dtype), threads)
    return state, Manifest(digests)


def hash_shards(info: CheckpointInfo, expected: Manifest | None = None, threads: int | None = None) -> Manifest:
    """The manifest of `info`'s shards, each checked against `expected`, without loading any tensor."""
    files = shard_files(info)
    load.check_listing(info, files, expected)
    read = load.read_shards(info, files, expected, None, threads)
    return Manifest(tuple(d for d, _ in read.values()))
