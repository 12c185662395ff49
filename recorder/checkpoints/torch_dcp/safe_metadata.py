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
a path included. The unpickler is Python's C one, so that a `.metadata` of 120,000 tensor chunks reads in
about the time torch's own `read_metadata` takes. Its BUILD cannot be overridden, but it calls the object's
own `__setstate__` where there is one; so `find_class` never hands out torch's class itself but a checked
subclass whose `__setstate__` sets only the allowed fields and then makes the object an instance of torch's
class. The planner's classes become placeholders the metadata drops (nothing reads the save plans, and they
would double the memory a large `.metadata` takes); a path, a `torch.Size`, an enum member and
`OrderedDict` come from subclasses or makers that refuse any state; no attribute of a dtype can be set.

torch's own weights-only unpickler (`torch.load(weights_only=True)` with `safe_globals`) implements only
pickle protocol 2 and stops at protocol 4's FRAME and SHORT_BINUNICODE opcodes, so it cannot read
`.metadata`; the allow list is the same idea, applied by `find_class` and BUILD.
"""

from __future__ import annotations

import functools
import hashlib
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


class MetadataRefused(ValueError):
    """A BUILD (a state set on an object made) that the allow list does not name, worded for the message that
    names the file."""


_PythonUnpickler: Any = pickle._Unpickler  # the pure-Python one: its BUILD can be replaced (torch_save_view)


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
            stray = sorted(set(_state_names(state, self.refuse)) - allowed)
            if stray:
                raise self.refuse(
                    f"sets {', '.join(map(repr, stray))} on a {type(inst).__name__}, which has no such field"
                )
        super().load_build()

    dispatch = dict(_PythonUnpickler.dispatch)
    dispatch[pickle.BUILD[0]] = load_build


def _state_names(state: Any, refuse: Any) -> list[Any]:
    """The attribute names a BUILD state sets: a dict, or (dict, slots dict) with either None."""
    slots = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
    return [k for part in slots if part is not None for k in _keys(part, refuse)]


def _keys(part: Any, refuse: Any) -> list[Any]:
    if not isinstance(part, dict) or not all(isinstance(k, str) for k in part):
        raise refuse(f"gives a state of {type(part).__name__}, not a dict of attribute names")
    return list(part)


def _checked_dataclass(cls: type, fields: frozenset[str]) -> type:
    """A subclass of `cls` for NEWOBJ to make: its BUILD sets only `fields`, then the object is a `cls`."""

    def __setstate__(self: Any, state: Any) -> None:
        if type(state) is dict and state.keys() <= fields:  # what torch writes: no check costs less per object
            object.__setattr__(self, "__class__", cls)
            self.__dict__.update(state)
            self.__dict__.pop("all_local_plans", None)
            return
        stray = sorted(set(_state_names(state, MetadataRefused)) - fields)
        if stray:
            raise MetadataRefused(f"sets {', '.join(map(repr, stray))} on a {cls.__name__}, which has no such field")
        slots = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
        object.__setattr__(self, "__class__", cls)
        for part in slots:
            if part is not None:
                self.__dict__.update(part)
        self.__dict__.pop("all_local_plans", None)  # save plans: read by nothing, as large as the rest

    return type(cls.__name__, (cls,), {"__slots__": (), "__setstate__": __setstate__, "__module__": __name__})


def _checked_tensor_properties(cls: type) -> type:
    """TensorProperties sets its five fields from a tuple through its own `__setstate__`."""

    def __setstate__(self: Any, state: Any) -> None:
        if not isinstance(state, tuple):
            raise MetadataRefused(f"gives a {cls.__name__} a {type(state).__name__} state, not a tuple")
        object.__setattr__(self, "__class__", cls)
        members = tuple(v.member() if isinstance(v, _EnumValue) else v for v in state)
        cls.__setstate__(self, members)  # type: ignore[attr-defined]

    return type(cls.__name__, (cls,), {"__slots__": (), "__setstate__": __setstate__, "__module__": __name__})


class _Placeholder:
    """What an object of a save plan becomes: nothing kept; a state is checked against the planner class's
    fields (none for its enum) and dropped."""

    __slots__ = ()
    fields: frozenset[str] = frozenset()
    what = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> _Placeholder:
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        if type(state) is dict and self.fields and state.keys() <= self.fields:
            return
        if not self.fields:
            raise MetadataRefused(f"sets attributes on a {self.what}, which a pickle here never does")
        stray = sorted(set(_state_names(state, MetadataRefused)) - self.fields)
        if stray:
            raise MetadataRefused(f"sets {', '.join(map(repr, stray))} on a {self.what}, which has no such field")


class _Maker:
    """A callable the pickle may call (REDUCE) to make a plain value; a state set on it is refused."""

    __slots__ = ("make", "what")

    def __init__(self, make: Any, what: str) -> None:
        self.make, self.what = make, what

    def __call__(self, *args: Any) -> Any:
        return self.make(*args)

    def __setstate__(self, state: Any) -> None:
        raise MetadataRefused(f"sets attributes on {self.what}, which a pickle here never does")


class _EnumValue:
    """A member of the metadata module's enum (TensorProperties' memory format), named by its value until
    TensorProperties takes it: the member itself is shared by the whole process, and a state set on it would
    change it for every later load."""

    __slots__ = ("enum", "value")

    def __init__(self, enum: Any, value: Any) -> None:
        self.enum, self.value = enum, value

    def member(self) -> Any:
        return self.enum(self.value)

    def __setstate__(self, state: Any) -> None:
        raise MetadataRefused(f"sets attributes on a {self.enum.__name__}, which a pickle here never does")


def _no_state(cls: type) -> type:
    """A subclass of a path class or OrderedDict that refuses any state, and pickles as `cls` again."""

    def __setstate__(self: Any, state: Any) -> None:
        raise MetadataRefused(f"sets attributes on a {cls.__name__}, which a pickle here never does")

    def __reduce__(self: Any) -> Any:
        if isinstance(self, dict):
            return (cls, (), None, None, iter(self.items()))
        return (cls, tuple(self.parts))

    body = {"__slots__": (), "__setstate__": __setstate__, "__reduce__": __reduce__, "__module__": __name__}
    return type(cls.__name__, (cls,), body)


@functools.cache
def checked_globals() -> dict[tuple[str, str], Any]:
    """(module, name) -> what the C unpickler is handed for it (see the module docstring)."""
    import dataclasses

    import torch
    import torch.distributed.checkpoint.planner as planner

    settable = settable_attributes()
    out: dict[tuple[str, str], Any] = {}
    for key, obj in allowed_globals().items():
        if obj in settable and "__setstate__" in settable[obj]:
            out[key] = _checked_tensor_properties(obj)
        elif key[0] == planner.__name__:
            fields = frozenset(f.name for f in dataclasses.fields(obj)) if dataclasses.is_dataclass(obj) else None
            body = {"__slots__": (), "fields": fields or frozenset(), "what": obj.__name__}
            out[key] = type(obj.__name__, (_Placeholder,), body)
        elif inspect.isclass(obj) and obj in settable:
            out[key] = _checked_dataclass(obj, settable[obj])
        elif obj is torch.Size:  # an immutable type: neither it nor a Size made can be given a state
            out[key] = obj
        elif key == ("torch.serialization", "_get_layout"):
            out[key] = _Maker(obj, "a layout")
        elif inspect.isclass(obj) and (key[0] == "pathlib" or key[1] == "OrderedDict"):
            out[key] = _no_state(obj)
        elif isinstance(obj, torch.dtype):
            out[key] = obj  # no attribute of a dtype can be set
        else:  # the metadata module's enum
            out[key] = _Maker(functools.partial(_EnumValue, obj), f"a {obj.__name__}")
    return out


class _AllowListUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, where: Path) -> None:
        super().__init__(io.BytesIO(data))
        self._checked = checked_globals()
        self._where = where

    def find_class(self, module: str, name: str) -> Any:
        found = self._checked.get((module, name))
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
    except MetadataRefused as e:
        raise UnsafeMetadataError(
            f"{path}: {e}: refused (a .metadata holds only checkpoint metadata; this one was not written by "
            "torch.distributed.checkpoint, or was altered)"
        ) from e
    except Exception as e:  # a truncated or garbled pickle raises anything from EOFError to ValueError
        raise CheckpointError(f"{path}: not torch distributed checkpoint metadata ({type(e).__name__}: {e})") from e
    if not isinstance(loaded, Metadata):
        raise CheckpointError(f"{path}: holds a {type(loaded).__name__}, not torch distributed checkpoint metadata")
    object.__setattr__(loaded, "__class__", Metadata)  # a Metadata given no state at all
    for md in loaded.state_dict_metadata.values():  # a class without fields is given no state: no BUILD made it
        if type(md).__module__ == __name__:
            object.__setattr__(md, "__class__", type(md).__mro__[1])
    return loaded


_RECENT: dict[str, Any] = {}  # the sha256 of the last `.metadata` bytes read through shared_metadata -> its Metadata


def shared_metadata(path: Path, data: bytes) -> Any:
    """The Metadata in `data` (`.metadata`'s bytes, read from `path`), to be read and never changed: the same
    bytes again (by sha256) give the same object, parsed once. An import checks that no shard a step's
    `.metadata` names is missing, lists its shards, loads it and names the shards it left out: each reads
    the file, one parse serves all. A caller that changes the metadata calls load_metadata."""
    digest = hashlib.sha256(data).hexdigest()
    found = _RECENT.get(digest)
    if found is None:
        found = load_metadata(path, data)
        _RECENT.clear()  # one slot: a large `.metadata` parsed is hundreds of MB
        _RECENT[digest] = found
    return found
