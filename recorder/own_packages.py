"""The project's own top-level packages come from where the project is installed, never from a user's file
of the same name.

The project installs five top-level names: recorder, replay, trainer, evaluator, schemas. Python puts the
working directory (or a script's folder) first on sys.path, so a user's `trainer.py` beside a training
script, or in the folder `torchrun -m recorder.cli train` starts in, would be imported in place of the
project's `trainer` the moment the recorder imports it. `install` puts one finder first on sys.meta_path
that resolves exactly those names, as top-level imports, to the folder holding this package; every other
name, and every submodule (found through its package's own path), is imported as before.

The price, documented in docs/design.md: once `recorder` is imported, `import trainer` in the same process
gives the project's trainer, also to a user whose own module is named trainer.py (rename it). A user module
imported under one of these names before the recorder stays as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType

PROJECT_PACKAGES = ("recorder", "replay", "trainer", "evaluator", "schemas")
HOME = str(Path(__file__).absolute().parent.parent)  # where this installation's packages live side by side


class OwnPackages(MetaPathFinder):
    """Finds the project's top-level packages in `home`, ahead of sys.path."""

    def __init__(self, home: str, names: Sequence[str]) -> None:
        self.home = home
        self.names = frozenset(names)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is not None or fullname not in self.names:
            return None
        return PathFinder.find_spec(fullname, [self.home])


def install(home: str = HOME) -> None:
    """Put the finder first on sys.meta_path (once), for the project's packages that `home` holds."""
    if any(isinstance(f, OwnPackages) for f in sys.meta_path):
        return
    names = [n for n in PROJECT_PACKAGES if (Path(home) / n / "__init__.py").is_file()]
    sys.meta_path.insert(0, OwnPackages(home, names))
