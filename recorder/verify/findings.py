"""What verify's semantic rules found, and the typed reading of a payload that may be forged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from recorder.errors import EventDecodeError
from recorder.store.events import Event
from recorder.store.kinds import Payload, PayloadError
from recorder.verify.problem import Problem


@dataclass
class Findings:
    """What the rules found: problems (the run fails verify) and warnings (something could not be checked)."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def fail(self, e: Event, rule: str, message: str, *, missing: bool = False) -> None:
        self.problems.append(Problem(e.segment, e.seq, message, rule, missing=missing))


P = TypeVar("P", bound=Payload)


def parsed(cls: type[P], e: Event, found: Findings) -> P | None:
    """`e`'s payload, or None after failing rule `payload` (a rechained segment can hold any data)."""
    try:
        return cls.from_event(e)
    except (PayloadError, EventDecodeError) as err:
        found.fail(e, "payload", str(err).split(": ", 1)[-1])
        return None
