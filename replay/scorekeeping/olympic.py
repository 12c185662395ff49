"""The benchmark score over a set of runs: mlperf-logging's own olympic averaging.

mlperf-logging 4.1.68's `python -m mlperf_logging.result_summarizer.compute_score` crashes: it unpacks
four values from `_compute_strong_score_standalone(..., return_full_scores=True)`, which returns five
(ValueError: too many values to unpack). So we call the summarizer's scoring function
`_compute_olympic_average` directly, with the summarizer's own rule for how many runs may be dropped;
tests/replay/test_score.py checks that we match `_compute_strong_score_standalone` on a compliant set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Score:
    """An olympic score, or why there is none."""

    minutes: float | None
    runs: int
    dropped: int  # runs without a successful run_stop (the summarizer drops them)
    note: str


def max_dropped(benchmark: str | None) -> int:
    """How many non-converged runs the summarizer tolerates (its `_compute_strong_score_standalone`)."""
    return 4 if benchmark == "unet3d" else 1


def olympic(minutes: Sequence[float | None], benchmark: str | None) -> Score:
    """The olympic mean of converged runs' minutes (None = not converged) as the summarizer computes it.
    Minutes that are not finite (a NaN run_stop time) count as not converged: a NaN sorts anywhere and
    would be dropped or kept by its place in the set."""
    from mlperf_logging.result_summarizer.result_summarizer import _compute_olympic_average

    converged = [m for m in minutes if m is not None and math.isfinite(m)]
    dropped = len(minutes) - len(converged)
    limit = max_dropped(benchmark)
    if dropped > limit:
        return Score(None, len(minutes), dropped, f"too many non-converging runs ({dropped} > {limit})")
    mean = _compute_olympic_average(sorted(converged), dropped, limit)
    if mean is None:
        return Score(None, len(minutes), dropped, "no run left after dropping the fastest and slowest")
    return Score(float(mean), len(minutes), dropped, "")
