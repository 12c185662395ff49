"""`rule` has one meaning in module and class names: the MLPerf rule and its rulesets (recorder.rules,
replay.rulesets, replay.ruleset_facts). What verify holds a run to is a check (recorder.verify.facts.fact_checks,
timeline_checks, check_table, the registry's `Check`); the name a failing check cites stays `[rule ...]`, as
docs/integrity.md shows it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.layout.test_imports import MODULES

MLPERF_RULE_MODULES = {"recorder.rules", "replay.rulesets", "replay.ruleset_facts"}


def _verify_word(name: str) -> bool:
    """`rule` in a class name other than as an MLPerf ruleset's (KnownRuleset, UnknownRulesetError ...)."""
    return "rule" in name.lower().replace("ruleset", "")


def rule_named(modules: dict[str, Path]) -> list[str]:
    """Modules, and classes, whose name holds `rule` outside the MLPerf rule's own modules."""
    found = []
    for module, path in sorted(modules.items()):
        if module in MLPERF_RULE_MODULES:
            continue
        if "rule" in module.rpartition(".")[2].lower():
            found.append(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{module}.{n.name}" for n in tree.body if isinstance(n, ast.ClassDef) and _verify_word(n.name)]
    return found


def test_rule_means_the_mlperf_rule_only() -> None:
    assert rule_named(MODULES) == []


def test_the_mlperf_rule_modules_exist() -> None:
    assert MLPERF_RULE_MODULES <= set(MODULES)


def test_a_check_named_rule_is_found(tmp_path: Path) -> None:
    (tmp_path / "fact_rules.py").write_text("class Rule:\n    pass\n")
    (tmp_path / "facts.py").write_text("class TimelineRule:\n    pass\n\n\nclass UnknownRulesetError:\n    pass\n")
    found = rule_named({"recorder.verify.fact_rules": tmp_path / "fact_rules.py", "x.facts": tmp_path / "facts.py"})
    assert found == ["recorder.verify.fact_rules", "recorder.verify.fact_rules.Rule", "x.facts.TimelineRule"]
