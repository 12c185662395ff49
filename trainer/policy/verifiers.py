"""Verifiers: does a completion give the task's answer? One per `verifier.kind` of a task spec.

Shared by the evaluator (pass@k) and the trainer (the reward), so one spec scores and rewards alike. Each
verifier has a version that goes into results.json: a score is only comparable with another made by the
same verifier version.

- `exact`: the completion, stripped, equals the answer, stripped.
- `numeric`: the last number in the completion is within `tolerance` of the answer (commas ignored).
- `regex`: the first capture group of `pattern` in the completion, stripped, equals the answer.
- `math`: `math-verify` (extra `math`) parses both and compares them symbolically.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

from trainer.policy.errors import TaskError

VerifierKind = Literal["exact", "numeric", "regex", "math"]
KINDS: tuple[str, ...] = get_args(VerifierKind)
# The last number in a text: optional sign, digits with optional thousands commas, optional decimals.
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?|[-+]?\.\d+")


class VerifierError(TaskError):
    """A verifier that cannot be built: unknown kind, bad pattern, missing package."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Verifier:
    """A built verifier. `check(completion, answer)` is True when the completion is correct."""

    kind: VerifierKind
    tolerance: float = 0.0  # numeric only: largest |value - answer| that still counts
    pattern: str | None = None  # regex only: must hold one capture group

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise VerifierError(f"verifier kind {self.kind!r}: expected one of {', '.join(KINDS)}")
        if self.kind == "numeric" and not self.tolerance >= 0:
            raise VerifierError(f"verifier tolerance {self.tolerance!r}: a non-negative number")
        if self.kind == "regex":
            if not self.pattern:
                raise VerifierError("verifier kind 'regex' needs pattern = '...' with one capture group")
            try:
                groups = re.compile(self.pattern).groups
            except re.error as e:
                raise VerifierError(f"verifier pattern {self.pattern!r} is not a regular expression: {e}") from e
            if groups < 1:
                raise VerifierError(f"verifier pattern {self.pattern!r} has no capture group: add (...)")
        if self.kind == "math":
            _math_verify()  # fail when the spec is loaded, not at the first sample

    @property
    def version(self) -> str:
        """Name and version of the verifier, for results.json."""
        if self.kind == "math":
            from importlib.metadata import version

            return f"math-verify {version('math-verify')}"
        return f"{self.kind}/1"

    def check(self, completion: str, answer: str) -> bool:
        if self.kind == "exact":
            return completion.strip() == answer.strip()
        if self.kind == "numeric":
            return _numeric(completion, answer, self.tolerance)
        if self.kind == "regex":
            assert self.pattern is not None  # __post_init__
            found = re.search(self.pattern, completion)
            return found is not None and (found.group(1) or "").strip() == answer.strip()
        return _math(completion, answer)

    def reward(self, completion: str, answer: str) -> float:
        """1.0 when correct, else 0.0: the trainer's reward and the evaluator's sample outcome."""
        return 1.0 if self.check(completion, answer) else 0.0


def last_number(text: str) -> float | None:
    """The last number in `text` (thousands commas dropped), or None when there is none."""
    found = _NUMBER.findall(text)
    if not found:
        return None
    try:
        return float(found[-1].replace(",", ""))
    except ValueError:
        return None


def _numeric(completion: str, answer: str, tolerance: float) -> bool:
    value, expected = last_number(completion), last_number(answer)
    return value is not None and expected is not None and abs(value - expected) <= tolerance


def _math_verify() -> object:
    try:
        import math_verify
    except ImportError as e:
        raise VerifierError("verifier kind 'math' needs the math-verify package: pip install 'recorder[math]'") from e
    return math_verify


def _math(completion: str, answer: str) -> bool:
    import threading

    from math_verify import parse, verify

    # math-verify's timeouts use SIGALRM, which only the main thread may set: elsewhere (a Ray actor's or a
    # thread pool's thread) they are turned off rather than crash.
    timeout = 5 if threading.current_thread() is threading.main_thread() else None
    # The gold answer is wrapped in $...$ so that a bare "42" or "3/4" parses as LaTeX maths as well.
    gold = parse(f"${answer}$", parsing_timeout=timeout)
    predicted = parse(completion, parsing_timeout=timeout)
    return bool(verify(gold, predicted, timeout_seconds=timeout)) if gold and predicted else False
