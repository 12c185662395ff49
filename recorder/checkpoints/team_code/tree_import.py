"""Importing the team's `--model-code` tree so that what ran is what is recorded.

Python's own loader may run a module from `__pycache__/*.pyc` instead of its source: a planted bytecode
file whose header carries the clean source's mtime and size (or an unchecked-hash one) runs hidden code
while the source looks clean. And a module read twice (once to run, once to hash) can rewrite its own file
in between. So the tree's modules are imported by a finder of our own, first on `sys.meta_path` for the
rest of the process (a module the model imports lazily goes through it too): every module of the tree is
compiled from its source bytes, bytecode is neither read nor written, and the sha256 of exactly the bytes
that were compiled is recorded as they are read. A compiled module in the tree (a sourceless `.pyc`, an
extension) is refused naming its file: its code cannot be compared with a commit.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader
from pathlib import Path
from types import CodeType, ModuleType

_lock = threading.Lock()
_roots: list[Path] = []  # the most recently registered first: it provides a top-level name two trees share
_ran: dict[Path, list[str]] = {}  # resolved file -> sha256 of each distinct bytes it was executed from


class TreeImportError(ImportError):
    """A module of the tree that cannot run from its source: compiled only, or a link out of the tree."""


class SourceOnlyLoader(SourceFileLoader):
    """Compiles the module from the bytes of its source file, records their sha256, never touches bytecode."""

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        data = self.get_data(path)
        _record(Path(path).resolve(), hashlib.sha256(data).hexdigest())
        return self.source_to_code(data, path)  # no bytecode read, none written (SourceLoader.get_code's cache)


class TreeFinder(MetaPathFinder):
    """Finds the modules of the registered trees (top-level names the trees provide, and anything found on a
    package path inside a tree) and gives them the source-only loader."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        with _lock:
            roots = tuple(_roots)
        if not roots:
            return None
        if path is None:
            root = next((r for r in roots if fullname in top_level_names(r)), None)
            if root is None:
                return None
            search: list[str] = [str(root)]
        else:
            search = list(path)
            root = next((r for r in roots for p in search if _under(Path(p).resolve(), r)), None)
            if root is None:
                return None
        spec = PathFinder.find_spec(fullname, search, target)
        if spec is None or spec.origin is None or not spec.has_location:
            return spec  # not found, or a namespace package (no file of its own runs)
        origin = Path(spec.origin)
        if not _under(origin.resolve(), root):
            raise TreeImportError(
                f"module {fullname}: {origin} links out of --model-code {root} (to {origin.resolve()})"
            )
        if not isinstance(spec.loader, SourceFileLoader):
            raise TreeImportError(
                f"module {fullname}: {origin} in --model-code {root} is compiled code, not Python source: "
                "its code cannot be compared with the commit; remove it and keep the source"
            )
        spec.loader = SourceOnlyLoader(fullname, str(origin))
        return spec


_finder = TreeFinder()


def register(root: Path) -> None:
    """Imports of ROOT's modules from now on go through the source-only loader (ROOT resolved); ROOT's
    top-level names are taken from it rather than from a tree registered before."""
    with _lock:
        if root in _roots:
            _roots.remove(root)
        _roots.insert(0, root)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)


def executed(root: Path) -> list[tuple[str, str]]:
    """(path relative to ROOT, sha256) of every module of ROOT executed so far, one pair per distinct content
    a file ran from (a module reloaded after its file changed has two), sorted."""
    with _lock:
        items = [(f, h) for f, hashes in _ran.items() if _under(f, root) for h in hashes]
    return sorted((f.relative_to(root).as_posix(), h) for f, h in items)


def registered() -> tuple[Path, ...]:
    """The registered trees, the most recent first."""
    with _lock:
        return tuple(_roots)


def in_registered_tree(file: Path) -> bool:
    """Whether the (resolved) file lies in a registered tree."""
    return any(_under(file, root) for root in registered())


def ran_from_source(file: Path) -> bool:
    """Whether the (resolved) file was executed through the source-only loader."""
    with _lock:
        return file in _ran


def top_level_names(root: Path) -> set[str]:
    """The top-level modules and packages ROOT provides (none once ROOT is gone: the finder asks on every
    import, and must never fail one that is not the tree's)."""
    try:
        return {p.stem for p in root.glob("*.py")} | {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    except OSError:
        return set()


def _record(file: Path, sha256: str) -> None:
    with _lock:
        hashes = _ran.setdefault(file, [])
        if sha256 not in hashes:
            hashes.append(sha256)


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
