"""A problem verify found: where (segment, seq) and which rule the run breaks."""

from __future__ import annotations

from dataclasses import dataclass

from recorder.verify.registry import rule


@dataclass(frozen=True)
class Problem:
    """Something altered, missing or impossible, located by segment and, where known, the first bad seq.

    `rule` names the semantic rule broken (empty for byte-level damage, which is its own rule). `untrusted`:
    the events chain as written but no accepted key vouches for them (signed by another key, or unsigned where
    a key must sign): a matter of trust, not a sign that anything was altered.
    """

    segment: str
    seq: int | None
    message: str
    rule: str = ""
    untrusted: bool = False
    # a file the events name is gone (derived/evals/ deleted): nothing can be checked, nothing shown altered
    missing: bool = False

    def __post_init__(self) -> None:
        if self.rule:
            rule(self.rule)  # every named rule is registered, so the docs' table lists it

    def __str__(self) -> str:
        where = self.segment + (f" seq {self.seq}" if self.seq is not None else "")
        rule = f" [rule {self.rule}]" if self.rule else ""
        return f"{where}: {self.message}{rule}"
