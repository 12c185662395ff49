"""The strong-scaling score of a set of runs, as mlperf-logging's result summarizer computes it for a result
folder (`_compute_strong_score_standalone`):

- a run counts when the compliance checker passes it (`_read_result_file`) and it has run_start and
  run_stop; its minutes are (run_stop - run_start) / 60 / 1000 of the stamps as the parser reads them;
- every other run is dropped; more dropped than the benchmark allows (4 for unet3d, else 1) gives no score;
- the olympic average of the rest (`_compute_olympic_average`), times the folder's scaling factor.

A checker that raises would stop the summarizer itself: the set is then not scored, and the reason says so.
Power results are out of scope.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from replay.checkers.check import CheckResult, mlperf_logging_version
from replay.scorekeeping.olympic import max_dropped, olympic


@dataclass(frozen=True)
class RunOutcome:
    """One run of the set: its minutes as derived, and the compliance checker's verdict on that log."""

    run: str
    minutes: float | None  # None: no run_start/run_stop (or nothing derived)
    status: str  # success | aborted | none
    check: CheckResult | None  # None: nothing was derived to check
    error: str = ""  # why nothing was derived
    interpretation: str = ""
    proof: str = ""  # what the verdict rests on (recorder.verify.proof)

    @property
    def compliant(self) -> bool:
        return self.check is not None and self.check.ok

    @property
    def finite(self) -> bool:
        """Minutes that are a number: a NaN or infinite run_stop time scores nothing, wherever it sits."""
        return self.minutes is not None and math.isfinite(self.minutes)

    @property
    def counted(self) -> bool:
        """Whether the summarizer keeps this run's minutes (else it drops the run)."""
        return self.compliant and self.finite

    def reasons(self) -> list[str]:
        if self.check is None:
            return [self.error] if self.error else []
        if self.check.error is not None:
            return [self.check.error]
        out = list(self.check.reasons)
        if self.check.ok and self.minutes is None:
            out.append("no run_start or run_stop line")
        elif self.minutes is not None and not self.finite:
            out.append(f"minutes are not a number ({self.minutes}): its run_start or run_stop time is not finite")
        return out


@dataclass(frozen=True)
class SetScore:
    """The summarizer's score of one set, with every run and why it counts or not."""

    benchmark: str | None
    ruleset: str
    division: str | None
    runs: tuple[RunOutcome, ...]
    olympic_minutes: float | None
    scaling_factor: float
    score_minutes: float | None
    reasons: tuple[str, ...]
    rcp: CheckResult | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def scored(self) -> bool:
        return self.score_minutes is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "benchmark": self.benchmark,
            "ruleset": self.ruleset,
            "division": self.division,
            "runs": [
                {
                    "run": r.run,
                    "interpretation": r.interpretation,
                    "minutes": r.minutes if r.finite else None,
                    "status": r.status,
                    "compliant": r.compliant,
                    "reasons": r.reasons(),
                    "proven_by": r.proof,
                }
                for r in self.runs
            ],
            "olympic_minutes": self.olympic_minutes,
            "scaling_factor": self.scaling_factor,
            "score_minutes": self.score_minutes,
            "scored": self.scored,
            "reasons": list(self.reasons),
            "mlperf_logging": mlperf_logging_version(),
        }
        if self.rcp is not None:
            error = [self.rcp.error] if self.rcp.error is not None else []
            out["rcp"] = {"verdict": self.rcp.verdict, "reasons": [*error, *self.rcp.reasons]}
        return out | self.extra


def score_set(
    runs: Sequence[RunOutcome],
    benchmark: str | None,
    ruleset: str,
    division: str | None,
    scaling_factor: float,
    rcp: CheckResult | None = None,
) -> SetScore:
    """The summarizer's strong-scaling score of `runs` (see the module docstring)."""
    crashed = [r for r in runs if r.check is not None and r.check.error is not None]
    reasons: list[str] = []
    olympic_minutes = None
    if crashed:
        first = crashed[0]
        error = first.check.error if first.check is not None else ""
        reasons.append(
            f"mlperf-logging's checker raises on {len(crashed)} run(s) ({first.run}: {error}): its result "
            "summarizer would stop there, so nothing is scored"
        )
    else:
        result = olympic([r.minutes if r.counted else None for r in runs], benchmark)
        olympic_minutes = result.minutes
        dropped = [r.run for r in runs if not r.counted]
        if result.minutes is None and result.dropped > max_dropped(benchmark):
            reasons.append(
                f"{len(dropped)} of {len(runs)} runs dropped (non-compliant, or no run_start/run_stop) and the "
                f"summarizer allows {max_dropped(benchmark)} for {benchmark}: {', '.join(dropped)}"
            )
        elif result.minutes is None:
            reasons.append(result.note)
        elif dropped:
            reasons.append(f"dropped by olympic scoring (non-compliant or no run_stop): {', '.join(dropped)}")
    score = None if olympic_minutes is None else olympic_minutes * scaling_factor
    return SetScore(
        benchmark, ruleset, division, tuple(runs), olympic_minutes, scaling_factor, score, tuple(reasons), rcp
    )
