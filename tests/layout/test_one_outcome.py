"""One type says what happened to one planned step of an evaluation session (evaluator.session.StepOutcome),
for the benchmark evaluator and for a harness session (lm-eval) alike: the table, the exit code and the
zero-shot command read one shape."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.layout.test_imports import MODULES

# What makes a class a step's outcome: its step, how it ended, why, the error, and how long it took.
OUTCOME_FIELDS = {"step", "status", "reason", "error", "seconds"}


def outcome_types(modules: dict[str, Path]) -> list[str]:
    """Every class whose annotated fields include OUTCOME_FIELDS."""
    found = []
    for module, path in sorted(modules.items()):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                fields = {
                    s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                }
                if OUTCOME_FIELDS <= fields:
                    found.append(f"{module}.{node.name}")
    return found


def test_one_step_outcome_type() -> None:
    assert outcome_types(MODULES) == ["evaluator.session.StepOutcome"]


def test_a_second_outcome_type_is_found(tmp_path: Path) -> None:
    copy = tmp_path / "run_session.py"
    copy.write_text("class StepOutcome:\n" + "".join(f"    {f}: int\n" for f in sorted(OUTCOME_FIELDS)))
    assert outcome_types({"evaluator.harness.run_session": copy}) == ["evaluator.harness.run_session.StepOutcome"]
