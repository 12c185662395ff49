"""DCP's `.metadata`, read through an allow-listing unpickler: the one pickle the recorder ever reads.

torch writes `.metadata` with `pickle.dump` (protocol 4). A pickle can name any importable callable and
call it while loading, so a hostile `.metadata` could run a command. This unpickler resolves a global only
if it is on the allow list: the classes `torch.distributed.checkpoint.metadata` defines, the storage
record of its file system writer, the four save-plan classes of its planner (megatron-core keeps every
rank's save plan in the metadata: `SavePlan`, `WriteItem`, `WriteItemType`, `TensorWriteData`), torch's
dtypes, `torch.Size`, torch's layout lookup and plain paths. Anything else is refused before it is
resolved, so nothing of it runs.

Naming a class is not all a pickle can do: its BUILD opcode sets attributes on an object already made
(any name, through `__dict__`, or through the class's own `__setstate__`: on a tensor, `requires_grad`, its
hooks, even its storage). So BUILD is checked too: it may set only the fields the allow list names for that
object's class (`settable_attributes`: the dataclass fields of the metadata classes; `TensorProperties`
through its own `__setstate__`, which sets its five fields), and on nothing else, an enum member, a dtype or
a path included. The unpickler is Python's own pure-Python one (the C one's BUILD cannot be overridden): a
`.metadata` of 50,000 tensors reads in about 1.7 times the C unpickler's time.

torch's own weights-only unpickler (`torch.load(weights_only=True)` with `safe_globals`) implements only
pickle protocol 2 and stops at protocol 4's FRAME and SHORT_BINUNICODE opcodes, so it cannot read
`.metadata`; the allow list is the same idea, applied by `find_class` and BUILD.
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


def settable_attributes() -> dict[type, frozenset[str]]:
    """class -> the attributes a `.metadata` pickle's BUILD may set on an object of exactly that class."""
    import dataclasses

    import torch.distributed.checkpoint.metadata as metadata

    settable = {
        cls: frozenset(f.name for f in dataclasses.fields(cls))
        for cls in allowed_globals().values()
        if inspect.isclass(cls) and dataclasses.is_dataclass(cls) and cls is not metadata.TensorProperties
    }
    settable[metadata.Metadata] |= {"all_local_plans"}  # megatron-core keeps every rank's save plan there
    settable[metadata.TensorProperties] = frozenset({"__setstate__"})  # its own, from a tuple of its five fields
    return settable


_PythonUnpickler: Any = pickle._Unpickler  # the pure-Python one, by design: its BUILD can be replaced


class AttributeCheckedUnpickler(_PythonUnpickler):  # type: ignore[misc]
    """Python's pure-Python unpickler, whose BUILD sets only what `settable` names for the object's exact
    class (a dict of those fields; "__setstate__": the class's own, given a tuple); `refuse` words the error."""

    settable: dict[type, frozenset[str]] = {}

    def refuse(self, why: str) -> Exception:
        return ValueError(why)

    def load_build(self) -> None:
        state, inst = self.stack[-1], self.stack[-2]
        allowed = self.settable.get(type(inst))
        if allowed is None:
            raise self.refuse(f"sets attributes on a {type(inst).__name__}, which a pickle here never does")
        if "__setstate__" in allowed:
            if not isinstance(state, tuple):
                raise self.refuse(f"gives a {type(inst).__name__} a {type(state).__name__} state, not a tuple")
        else:
            slots = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
            names = [k for part in slots if part is not None for k in _keys(part, self.refuse)]
            stray = sorted(set(names) - allowed)
            if stray:
                raise self.refuse(
                    f"sets {', '.join(map(repr, stray))} on a {type(inst).__name__}, which has no such field"
                )
        super().load_build()

    dispatch = dict(_PythonUnpickler.dispatch)
    dispatch[pickle.BUILD[0]] = load_build


def _keys(part: Any, refuse: Any) -> list[Any]:
    if not isinstance(part, dict) or not all(isinstance(k, str) for k in part):
        raise refuse(f"gives a state of {type(part).__name__}, not a dict of attribute names")
    return list(part)


class _AllowListUnpickler(AttributeCheckedUnpickler):
    def __init__(self, data: bytes, where: Path) -> None:
        super().__init__(io.BytesIO(data))
        self._allowed = allowed_globals()
        self._where = where
        self.settable = settable_attributes()

    def refuse(self, why: str) -> Exception:
        return UnsafeMetadataError(
            f"{self._where}: {why}: refused (a .metadata holds only checkpoint metadata; this one was not written "
            "by torch.distributed.checkpoint, or was altered)"
        )

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
