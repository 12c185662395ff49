"""The order checkpoints are evaluated in: the rule allows any order ("evaluated offline, in any order")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evaluator.errors import OrderError


@dataclass(frozen=True, slots=True)
class Order:
    """`ascending`, `descending`, or an explicit list of steps (only those are evaluated)."""

    kind: Literal["ascending", "descending", "steps"]
    steps: tuple[int, ...] = ()

    def __str__(self) -> str:
        return ",".join(map(str, self.steps)) if self.kind == "steps" else self.kind


def parse_order(text: str) -> Order:
    """'ascending' | 'descending' | 'S1,S2,...' (distinct positive integers)."""
    text = text.strip()
    if text in ("ascending", "descending"):
        return Order(text)  # type: ignore[arg-type]
    parts = [p.strip() for p in text.split(",")]
    try:
        steps = tuple(int(p) for p in parts)
    except ValueError:
        raise OrderError(f"--order {text!r}: use ascending, descending, or steps like 19,18,20") from None
    if any(s < 1 for s in steps):
        raise OrderError(f"--order {text!r}: steps are positive integers")
    dupes = sorted({s for s in steps if steps.count(s) > 1})
    if dupes:
        raise OrderError(f"--order {text!r}: step {dupes[0]} is listed twice; list each step once")
    return Order("steps", steps)


def arrange(available: list[int], order: Order) -> list[int]:
    """The steps to evaluate, in order. Listed steps must all be available (committed, eligible)."""
    if order.kind == "ascending":
        return sorted(available)
    if order.kind == "descending":
        return sorted(available, reverse=True)
    unknown = [s for s in order.steps if s not in set(available)]
    if unknown:
        raise OrderError(
            f"--order {order}: no committed checkpoint at or after the validation start for step "
            f"{unknown[0]}; committed: {', '.join(map(str, sorted(available))) or 'none'}"
        )
    return list(order.steps)
