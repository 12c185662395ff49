"""A checkpoint that is one `torch.save` file (`ckpt_step000200.pt`): a dict holding the model's state dict
under an entry of the team's naming (`[tool.recorder.layout] state_key`), with its step and whatever else the
training kept, or the state dict itself.

The file is read once and hashed as it is read (load.read_shards); its bytes are unpickled by torch's own
allow list (`torch.load(weights_only=True)`: tensors, containers and plain values, no other object), so a
file that holds a class of the team's own is refused naming the file, never run. Before the checkpoint is
read, `saved_entries` lists the entries and their plain values through the same allow list, the tensors
left unread (memory-mapped), which is how the state dict's entry and the step are checked first.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recorder.checkpoints.detect import CheckpointInfo, tokenizer_dir_in
from recorder.checkpoints.load import read_shards
from recorder.checkpoints.manifest import ShardDigest
from trainer.policy.errors import CheckpointError

if TYPE_CHECKING:
    import torch

SUFFIXES = (".pt", ".pth", ".ckpt", ".bin")  # the names torch.save files go by
STATE_KEY_ENTRY = "[tool.recorder.layout] state_key in the model code's pyproject.toml"


def detect_torch_save(path: Path) -> CheckpointInfo | None:
    """A file torch.save wrote (a zip archive with its pickle inside), named as such files are."""
    import zipfile

    if not (path.is_file() and path.suffix in SUFFIXES and zipfile.is_zipfile(path)):
        return None
    return CheckpointInfo(
        path=path, format="torch-save", step=None, world_size=None, source_run=None, config={},
        tokenizer_dir=tokenizer_dir_in([path.parent, path.parent / "tokenizer"]), weights_dir=path.parent,
    )  # fmt: skip


def torch_save_files(info: CheckpointInfo) -> list[Path]:
    return [info.path]


def saved_entries(path: Path) -> dict[str, Any]:
    """The top-level entries of the file (a state dict's tensors unread); CheckpointError naming the file
    when it is not a dict torch's allow list loads."""
    import torch

    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as e:  # torch raises its own errors (and pickle's) for a file it refuses
        raise CheckpointError(f"{path}: not a torch.save file of tensors and plain values: {_first_line(e)}") from e
    if not isinstance(loaded, dict):
        raise CheckpointError(f"{path}: torch.save of a {type(loaded).__name__}, not a dict")
    return loaded


def state_dict_of(saved: dict[str, Any], key: str | None, path: Path) -> dict[str, Any]:
    """The model's state dict in the saved dict: the `key` entry ("" or None with only tensors in the dict:
    the dict itself); CheckpointError naming the entries and the declaration otherwise."""
    import torch

    if not key and all(isinstance(v, torch.Tensor) for v in saved.values()):
        return saved
    entry = saved.get(key) if key else None
    if not isinstance(entry, dict) or not all(isinstance(v, torch.Tensor) for v in entry.values()):
        which = f"its entry {key!r} is no state dict" if key else "no entry is named as the model's state dict"
        raise CheckpointError(
            f"{path}: a dict with entries {', '.join(map(str, saved))}: {which}; declare the entry that holds "
            f"the model's tensors, {STATE_KEY_ENTRY}"
        )
    return dict(entry)


def read_torch_save(
    info: CheckpointInfo, files: list[Path], expected: Any, dtype: torch.dtype, threads: int | None
) -> tuple[dict[str, Any], tuple[ShardDigest, ...]]:
    """(the model's tensors, in `dtype` where floating; the file's digest), from one read of its bytes."""
    import torch

    def parse(buf: memoryview, path: Path) -> dict[str, Any]:
        try:
            saved = torch.load(io.BytesIO(buf), map_location="cpu", weights_only=True)
        except Exception as e:  # as in saved_entries
            raise CheckpointError(f"{path}: not a torch.save file of tensors and plain values: {_first_line(e)}") from e
        if not isinstance(saved, dict):
            raise CheckpointError(f"{path}: torch.save of a {type(saved).__name__}, not a dict")
        state = state_dict_of(saved, info.state_key, path)
        return {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}

    read = read_shards(info, files, expected, parse, threads)
    state = {k: v for _, part in read.values() for k, v in part.items()}
    return state, tuple(d for d, _ in read.values())


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
