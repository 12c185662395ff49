"""DCP's `.metadata`, read through an allow-listing unpickler: the one pickle the recorder ever reads.

torch writes `.metadata` with `pickle.dump` (protocol 4). A pickle can name any importable callable and
call it while loading, so a hostile `.metadata` could run a command. This unpickler resolves a global only
if it is on the allow list: the classes `torch.distributed.checkpoint.metadata` defines, the storage
record of its file system writer, the four save-plan classes of its planner (megatron-core keeps every
rank's save plan in the metadata: `SavePlan`, `WriteItem`, `WriteItemType`, `TensorWriteData`), torch's
dtypes, `torch.Size`, torch's layout lookup and plain paths. Anything else is refused before it is
resolved, so nothing of it runs.

torch's own weights-only unpickler (`torch.load(weights_only=True)` with `safe_globals`) implements only
pickle protocol 2 and stops at protocol 4's FRAME and SHORT_BINUNICODE opcodes, so it cannot read
`.metadata`; the allow list is the same idea, applied by `pickle.Unpickler.find_class`.
"""

from __future__ import annotations

import inspect
import io
import pickle
from pathlib import Path
from typing import Any

from trainer.policy.errors import CheckpointError, UnsafeMetadataError

MAX_METADATA_BYTES = 1 << 30  # a 397B model's metadata is tens of MB
# megatron-core's `.metadata` holds `all_local_plans`: these and no other class of the planner module
SAVE_PLAN_CLASSES = ("SavePlan", "WriteItem", "WriteItemType", "TensorWriteData")


def allowed_globals() -> dict[tuple[str, str], Any]:
    """(module, name) -> object, for every global a DCP `.metadata` may name."""
    import pathlib

    import torch
    import torch.distributed.checkpoint.filesystem as filesystem
    import torch.distributed.checkpoint.metadata as metadata
    import torch.distributed.checkpoint.planner as planner
    import torch.serialization

    allowed: dict[tuple[str, str], Any] = {
        (metadata.__name__, name): obj
        for name, obj in vars(metadata).items()
        if inspect.isclass(obj) and obj.__module__ == metadata.__name__
    }
    allowed[(filesystem.__name__, "_StorageInfo")] = filesystem._StorageInfo
    for name in SAVE_PLAN_CLASSES:
        allowed[(planner.__name__, name)] = getattr(planner, name)
    allowed[("torch", "Size")] = torch.Size
    allowed[("torch.serialization", "_get_layout")] = torch.serialization._get_layout
    for name, obj in vars(torch).items():
        if isinstance(obj, torch.dtype):
            allowed[("torch", name)] = obj
    for cls in (pathlib.PosixPath, pathlib.PurePosixPath, pathlib.WindowsPath, pathlib.PureWindowsPath):
        allowed[("pathlib", cls.__name__)] = cls
    allowed[("collections", "OrderedDict")] = __import__("collections").OrderedDict
    return allowed


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, where: Path) -> None:
        super().__init__(io.BytesIO(data))
        self._allowed = allowed_globals()
        self._where = where

    def find_class(self, module: str, name: str) -> Any:
        found = self._allowed.get((module, name))
        if found is None:
            raise UnsafeMetadataError(
                f"{self._where}: names {module}.{name}, which is not a torch distributed checkpoint metadata "
                "class: refused, nothing of it was run (a .metadata holds only checkpoint metadata; this one "
                "was not written by torch.distributed.checkpoint, or was altered)"
            )
        return found

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafeMetadataError(f"{self._where}: holds a persistent reference, which DCP metadata never does")


def load_metadata(path: Path, data: bytes | None = None) -> Any:
    """The `torch.distributed.checkpoint.metadata.Metadata` in the `.metadata` file at `path` (or in `data`,
    its bytes already read); UnsafeMetadataError for a global outside the allow list, CheckpointError for
    a file that is not DCP metadata."""
    from torch.distributed.checkpoint.metadata import Metadata

    if data is None:
        try:
            if path.stat().st_size > MAX_METADATA_BYTES:
                raise CheckpointError(f"{path}: {path.stat().st_size} bytes, more than DCP metadata ever holds")
            data = path.read_bytes()
        except OSError as e:
            raise CheckpointError(f"{path}: cannot read ({e.strerror})") from e
    try:
        loaded = _AllowListUnpickler(data, path).load()
    except UnsafeMetadataError:
        raise
    except Exception as e:  # a truncated or garbled pickle raises anything from EOFError to ValueError
        raise CheckpointError(f"{path}: not torch distributed checkpoint metadata ({type(e).__name__}: {e})") from e
    if not isinstance(loaded, Metadata):
        raise CheckpointError(f"{path}: holds a {type(loaded).__name__}, not torch distributed checkpoint metadata")
    return loaded
