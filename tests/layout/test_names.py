"""A module name has one meaning across the tree (docs/design.md, section 6): it repeats only for one
`errors.py` per package, for a command's module in recorder/cli/ named as the use case it calls, for a
results.json document in recorder/results/ named as the evaluation it documents, and for packages of data
(no code: task files)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.layout.test_imports import MODULES

CONVENTION = {"errors", "__init__"}


NAMED_AFTER_ANOTHER = ("recorder.cli.", "recorder.results.")


def repeated_names(modules: list[str], data_only: frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """Module names (last part) held by more than one module, but those the convention allows."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for module in modules:
        if module not in data_only:
            by_name[module.rpartition(".")[2]].append(module)
    out = {}
    for name, holders in by_name.items():
        own = [m for m in holders if not m.startswith(NAMED_AFTER_ANOTHER)]
        if name not in CONVENTION and len(own) > 1:
            out[name] = sorted(holders)
    return out


def _data_packages() -> frozenset[str]:
    """Packages with no module of their own and an __init__ holding a docstring at most: folders of data."""
    found = set()
    for module, path in MODULES.items():
        if Path(path).name == "__init__.py" and not any(m.startswith(module + ".") for m in MODULES):
            body = ast.parse(Path(path).read_text()).body
            if all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body):
                found.add(module)
    return frozenset(found)


def test_every_module_name_has_one_meaning() -> None:
    # A package (its __init__) counts under its own name, so a module may not share a package's name either.
    assert repeated_names(sorted(MODULES), _data_packages()) == {}


def test_the_check_finds_a_repeated_name() -> None:
    modules = [
        "recorder.verify.facts",
        "evaluator.facts",
        "recorder.cli.evaluation.audit",
        "evaluator.auditing.audit",
        "a.errors",
        "b.errors",
    ]
    assert repeated_names(modules) == {"facts": ["evaluator.facts", "recorder.verify.facts"]}
