"""Every module executed while the team's model is built and run, seen as it runs, whatever it does later.

Checking `sys.modules` after the build misses code that covered its tracks: a module imported from a folder
put first on `sys.path` and then taken out of `sys.modules` again, one imported from a `.zip` (its file is a
path inside the archive, no file of its own), one that set its own `__file__` to None. So an audit hook
(`sys.addaudithook`) sees each `exec` of a module's code by a loader (`exec_module`, the one way importlib,
`importlib.reload` and a hand-made spec run a module), with the loader and the place it ran from as they are
at that instant, and code a module runs from a file by hand (`runpy.run_path`, `exec` of what `compile` made of a
file's text named by its path). A module is accepted when it ran from the `--model-code` tree through the
recorder's source-only loader (tree_import.py records its bytes), or through Python's own file loaders
(source, bytecode, extension) from a file of an installed library (the standard library, site-packages) or
of the recorder itself, or through a loader of an installed library's own (its `exec_module` in such a
file: torch generates modules from its templates). Anything else is a refusal, kept until `check` raises
it: the model ran code its provenance does not record.

An audit hook cannot be removed: it is installed on the first watch and costs one flag test per audited
event outside a watch, so a process that never loads model code pays nothing and one that did is not
watched after (tests neither).
"""

from __future__ import annotations

import sys
import threading
import zipimport
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib.machinery import ExtensionFileLoader, FrozenImporter, SourceFileLoader, SourcelessFileLoader
from pathlib import Path
from types import CodeType, FrameType, ModuleType
from typing import Any

from recorder.checkpoints.team_code import tree_import
from trainer.policy.errors import ModelCodeError

_lock = threading.RLock()
_depth = 0  # open watches; the hook records only while it is above 0
_installed = False
_judging = threading.local()
_refused: list[str] = []  # what ran from outside the tree and the installed libraries, in the order it ran
# exactly these (a subclass may run any code); an extension's init may exec code it holds as text (Cython)
_FILE_LOADERS = (SourceFileLoader, SourcelessFileLoader, ExtensionFileLoader)


@contextmanager
def watching() -> Iterator[None]:
    """Record every module executed inside the block (and in other threads while it is open); the outermost
    watch starts with nothing refused."""
    global _depth, _installed
    _places()  # imports what it reads before any watch: the hook itself imports nothing
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
        if _depth == 0:
            _refused.clear()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1


def check() -> None:
    """ModelCodeError naming the first module that ran from outside the tree and the installed libraries."""
    with _lock:
        first = _refused[0] if _refused else None
    if first is not None:
        raise ModelCodeError(first)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _depth or event != "exec" or getattr(_judging, "now", False):
        return
    code = args[0] if args else None
    if not isinstance(code, CodeType) or code.co_name != "<module>":
        return  # a function's code (exec of a generated function, a comprehension): no module of its own
    _judging.now = True  # what judging runs is the hook's own, not the model's
    try:
        why = _judge(code, sys._getframe(1))
    finally:
        _judging.now = False
    if why is not None:
        with _lock:
            _refused.append(why)


def _judge(code: CodeType, frame: FrameType | None) -> str | None:
    """Why this execution of module code is refused, or None."""
    module, loader, by = _loading(frame)
    if module is None:  # run by hand: judged by the file its code names, when it names one
        file = Path(code.co_filename)
        if not file.is_absolute() or not file.is_file() or _accepted_file(file):
            return None  # "<string>" and the like: generated text (dataclasses, namedtuple), not a module's file
        return _refusal("code", f"{file}, run by hand (not by a loader)")
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) or code.co_filename
    name = getattr(module, "__name__", "?")
    kind = loader.__name__ if isinstance(loader, type) else type(loader).__name__
    if isinstance(loader, tree_import.SourceOnlyLoader):
        if tree_import.in_registered_tree(Path(loader.path).resolve()):
            return None
    elif loader is FrozenImporter:
        return None  # compiled into the interpreter
    elif type(loader) in _FILE_LOADERS and _accepted_file(Path(str(origin))):
        return None
    elif isinstance(loader, zipimport.zipimporter) and _accepted_file(Path(loader.archive)):
        return None
    elif type(loader) not in _FILE_LOADERS and not isinstance(loader, zipimport.zipimporter) and _accepted_file(by):
        return None  # an installed library's own loader (torch's of a module it generates from its template)
    return _refusal(f"module {name}", f"{origin} (by {kind})")


def _loading(frame: FrameType | None) -> tuple[ModuleType | None, Any, Path]:
    """(the module a loader is executing, the loader, the file its `exec_module` is in) when this exec is a
    loader's `exec_module`: importlib's (exec_module -> _call_with_frames_removed -> exec) or a loader's own
    (exec_module -> exec). Module code that calls exec itself is not a loader running this code."""
    if frame is not None and frame.f_code.co_name == "_call_with_frames_removed":
        frame = frame.f_back
    if frame is None or frame.f_code.co_name != "exec_module":
        return None, None, Path()
    local = frame.f_locals
    module = local.get("module")
    if not isinstance(module, ModuleType):
        return None, None, Path()
    spec = getattr(module, "__spec__", None)
    return module, local.get("self", getattr(spec, "loader", None)), Path(frame.f_code.co_filename)


def _accepted_file(file: Path) -> bool:
    """A regular file of an installed library or of the recorder, not of a registered tree."""
    try:
        path = file.resolve()
        if not path.is_file():
            return False
    except OSError:
        return False
    if tree_import.in_registered_tree(path):
        return False  # the tree's modules run through the source-only loader, or not at all
    return any(place in path.parents for place in _places()) or recorded_by_a_distribution(path)


def recorded_by_a_distribution(path: Path) -> bool:
    """Whether `path` (resolved) is a file an installed distribution's RECORD lists, under the directory of
    `sys.path` it was installed into: a library installed beside the environment (`pip install --target DIR`,
    DIR on PYTHONPATH), with its name and version in its metadata, as much an installed library as
    site-packages'."""
    for entry in sys.path:
        base = Path(entry or ".").resolve()
        if base in path.parents and path.relative_to(base).as_posix() in _recorded(base):
            return True
    return False


@cache
def _recorded(base: Path) -> frozenset[str]:
    """The files the distributions installed in `base` record (their RECORD), relative to `base`."""
    from importlib.metadata import distributions

    found: set[str] = set()
    for dist in distributions(path=[str(base)]):
        found.update(str(f) for f in dist.files or ())
    return frozenset(found)


@cache
def _places() -> tuple[Path, ...]:
    import site
    import sysconfig

    from recorder.own_packages import HOME, PROJECT_PACKAGES

    paths = sysconfig.get_paths()
    places = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    places |= set(site.getsitepackages()) | {site.getusersitepackages()}
    places |= {str(Path(HOME) / name) for name in PROJECT_PACKAGES}
    return tuple(Path(p).resolve() for p in places if p)


def _refusal(what: str, where: str) -> str:
    roots = tree_import.registered()
    tree = f"--model-code {roots[0]}" if roots else "--model-code"
    return (
        f"{what} ran from {where}, outside {tree} and not an installed library: the model ran code its "
        "provenance does not record; move it into the tree (or install it)"
    )
