"""Every rule verify can name is in the registry, and the docs' rule table is the registry's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from recorder.verify.check_table import markdown_table, with_table
from recorder.verify.problem import Problem
from recorder.verify.registry import CHECKS

ROOT = Path(__file__).resolve().parents[2]


def rule_literals(source: str) -> set[str]:
    """The rule names a module's source passes as literals: `found.fail(e, "rule", ...)`, `Problem(..., rule)`
    and `*_RULE = "rule"` constants."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if called == "fail" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                names.add(node.args[1].value)
            if called == "Problem":
                given = node.args[3:4] + [k.value for k in node.keywords if k.arg == "rule"]
                names.update(a.value for a in given if isinstance(a, ast.Constant) and a.value)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if any(isinstance(t, ast.Name) and t.id.endswith("_RULE") for t in node.targets):
                names.add(node.value.value)
    return names


def _sources() -> list[Path]:
    return sorted(p for pkg in ("recorder", "replay", "evaluator") for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_rule_named_in_the_code_is_registered(path: Path) -> None:
    unknown = rule_literals(path.read_text(encoding="utf-8")) - set(CHECKS)
    assert not unknown, f"{path.relative_to(ROOT)} names rules the registry lacks: {sorted(unknown)}"


def test_the_scan_finds_an_unregistered_rule() -> None:
    source = 'found.fail(e, "no-such-rule", "m")\nX_RULE = "other-rule"\nProblem("s", 1, "m", "third-rule")\n'
    assert rule_literals(source) - set(CHECKS) == {"no-such-rule", "other-rule", "third-rule"}


def test_a_problem_with_an_unregistered_rule_is_refused() -> None:
    with pytest.raises(KeyError, match="no-such-rule"):
        Problem("trainer-0001.arrows", 3, "m", "no-such-rule")


def test_the_docs_rule_table_is_the_registry() -> None:
    doc = (ROOT / "docs" / "integrity.md").read_text(encoding="utf-8")
    assert markdown_table() in doc
    assert with_table(doc) == doc, "regenerate it: python -m recorder.verify.check_table --write docs/integrity.md"
