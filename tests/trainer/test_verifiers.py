"""The four verifiers, on hand-picked completions."""

from __future__ import annotations

import pytest

from trainer.policy.verifiers import Verifier, VerifierError, last_number


def test_exact_ignores_only_surrounding_whitespace() -> None:
    v = Verifier(kind="exact")
    assert v.check(" 42\n", "42") and not v.check("42.", "42") and not v.check("4 2", "42")


def test_numeric_takes_the_last_number_within_tolerance() -> None:
    v = Verifier(kind="numeric", tolerance=0.01)
    assert v.check("3 apples plus 4 is 1,234.005", "1234")
    assert not v.check("1234 then 1235", "1234")
    assert not v.check("no number", "1")
    assert last_number("-.5 and -2") == -2.0


def test_regex_compares_the_first_capture_group() -> None:
    v = Verifier(kind="regex", pattern=r"answer:\s*(\S+)")
    assert v.check("so the answer: 7 done", "7") and not v.check("answer: 8", "7") and not v.check("7", "7")


def test_math_compares_symbolically() -> None:
    pytest.importorskip("math_verify")
    v = Verifier(kind="math")
    assert v.check("So the result is $\\frac{3}{4}$.", "0.75")
    assert v.check("The answer is \\boxed{12}", "12")
    assert not v.check("The answer is \\boxed{13}", "12")
    assert v.version.startswith("math-verify ")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "fuzzy"}, "expected one of exact, numeric, regex, math"),
        ({"kind": "regex"}, "needs pattern"),
        ({"kind": "regex", "pattern": "no group"}, "no capture group"),
        ({"kind": "regex", "pattern": "(unclosed"}, "not a regular expression"),
        ({"kind": "numeric", "tolerance": -1.0}, "non-negative"),
    ],
)
def test_bad_verifiers_say_what_to_fix(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(VerifierError, match=message):
        Verifier(**kwargs)  # type: ignore[arg-type]
