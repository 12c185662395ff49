"""One lm-eval path: every zero-shot score is made by evaluator/harness/lm_eval_run.py's `simple_evaluate`
(`recorder zero-shot` on any checkpoint, the harness session on a recorder run, `recorder eval --harness
lm-eval` being that same session); no other product module calls lm-eval's evaluation itself."""

from __future__ import annotations

from pathlib import Path

from tests.layout.test_imports import MODULES

THE_PATH = "evaluator.harness.lm_eval_run"


def callers_of_lm_eval(sources: dict[str, str]) -> list[str]:
    """Modules that run lm-eval's evaluation themselves (its simple_evaluate or evaluate)."""
    marks = ("lm_eval.simple_evaluate(", "lm_eval.evaluate(", "from lm_eval import simple_evaluate")
    return sorted(m for m, text in sources.items() if any(mark in text for mark in marks))


def test_lm_eval_is_called_in_one_place() -> None:
    sources = {m: Path(p).read_text() for m, p in MODULES.items()}
    assert callers_of_lm_eval(sources) == [THE_PATH]


def test_the_check_finds_a_second_caller() -> None:
    sources = {THE_PATH: "out = lm_eval.simple_evaluate(model=lm)", "evaluator.other": "lm_eval.evaluate(lm, d)"}
    assert callers_of_lm_eval(sources) == sorted(["evaluator.other", THE_PATH])
