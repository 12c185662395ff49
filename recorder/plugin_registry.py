"""A table of named entries that the project fills at import and other code looks up: `register`, `get`, `all`.
A name is held once: registering one the table already holds is refused (an entry is never replaced), so the
first registration is the one every later lookup sees.

An installed package adds entries without any import naming it: each entry point of the table's group (its
`entry_points.txt`, `[recorder.checkpoints.formats]` for the checkpoint formats) names an object of the entry
type, loaded once, the first time the table is asked for a name it does not hold or for all its entries. The
table then holds what every process with that package installed holds.

"module:attr" strings name what an entry needs only on use (`resolve`): a torch-free table may name a reader
that imports torch, and the core loads it only when a checkpoint is read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from recorder.errors import InputError

T = TypeVar("T")


class RegistryError(InputError):
    """An installed package's entry point that cannot be loaded, gives no entry of the table's type, or names
    one the table already holds."""


class Registry(Generic[T]):
    """Entries of type `kind` under the names `names_of(entry)` gives (its own name first, then any other it
    is looked up by); each name held once. `group`: the entry-point group installed packages add entries by."""

    def __init__(
        self, what: str, kind: type[T], names_of: Callable[[T], tuple[str, ...]], *, group: str | None = None
    ) -> None:
        self.what, self.kind, self.group = what, kind, group
        self._names_of = names_of
        self._entries: list[T] = []
        self._by_name: dict[str, T] = {}
        self._discovered = group is None

    def register(self, entry: T) -> T:
        """Add `entry`; ValueError when it is not a `kind` or one of its names is held already."""
        if not isinstance(entry, self.kind):
            raise ValueError(f"{self.what}: {entry!r} is not a {self.kind.__name__}")
        names = tuple(dict.fromkeys(self._names_of(entry)))
        held = [n for n in names if n in self._by_name]
        if held:
            raise ValueError(f"{self.what} {', '.join(held)}: already in the table")
        self._entries.append(entry)
        self._by_name.update(dict.fromkeys(names, entry))
        return entry

    def copy(self) -> Registry[T]:
        """A registry holding what this one holds now: what is registered in it leaves this one as it is."""
        other = Registry(self.what, self.kind, self._names_of, group=self.group)
        other._entries, other._by_name = list(self._entries), dict(self._by_name)
        other._discovered = self._discovered
        return other

    def find(self, name: str) -> T | None:
        """The entry `name` names, None when neither the table nor an installed package holds one."""
        if name not in self._by_name:
            self._discover()
        return self._by_name.get(name)

    def get(self, name: str) -> T:
        """The entry `name` names; KeyError naming the names held when there is none."""
        found = self.find(name)
        if found is None:
            raise KeyError(f"{self.what} {name!r}: not one of {', '.join(self.names())}")
        return found

    def all(self) -> tuple[T, ...]:
        """Every entry, in the order registered (those of installed packages after the project's own)."""
        self._discover()
        return tuple(self._entries)

    def names(self) -> tuple[str, ...]:
        """Every name an entry is looked up by."""
        self._discover()
        return tuple(self._by_name)

    def _discover(self) -> None:
        """Register the entries of the installed packages' entry points, once (by name, so in a fixed order).
        One that fails leaves the table as it was, and the next lookup names it again."""
        if self._discovered or self.group is None:
            return
        self._discovered = True  # first: an entry point's module that looks the table up does not recurse
        entries, by_name = list(self._entries), dict(self._by_name)
        try:
            self._register_installed(self.group)
        except RegistryError:
            self._entries, self._by_name, self._discovered = entries, by_name, False
            raise

    def _register_installed(self, group: str) -> None:
        from importlib.metadata import entry_points

        for point in sorted(entry_points(group=group), key=lambda p: (p.name, p.value)):
            where = f"entry point {point.name} = {point.value} ([{group}] of {_distribution(point)})"
            try:
                entry = point.load()
            except Exception as e:  # a team's module: any error it raises is named with the package's name
                raise RegistryError(f"{where}: cannot be loaded ({type(e).__name__}: {e}): fix or uninstall it") from e
            try:
                self.register(entry)
            except ValueError as e:
                raise RegistryError(f"{where}: {e}: rename it, or uninstall the package") from e


def resolve(target: str, kind: type[T], owner: str) -> T:
    """The `kind` object a "module:attr" string of `owner` (an entry, as an error names it) names, its module
    imported now; RegistryError naming the entry when it names none."""
    module, _, attr = target.partition(":")
    try:
        if not module or not attr:
            raise ValueError("no module:attr")
        found: Any = importlib.import_module(module)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError) as e:
        raise RegistryError(f"{owner}: {target!r} names nothing ({e}): give it as module:attr") from e
    if not isinstance(found, kind):
        raise RegistryError(f"{owner}: {target!r} is not a {kind.__name__}: give it as module:attr")
    return found


def _distribution(point: Any) -> str:
    dist = getattr(point, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an installed package"
