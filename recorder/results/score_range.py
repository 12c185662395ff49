"""The range a zero-shot score lies in, held where a results.json is read, so that no number outside it is
shown as a score.

Every score the harness reports is one of lm-eval's accuracies (`acc`, `acc_norm`: evaluator/harness keeps
only those), the share of a task's examples answered right: a finite number in [0, 1]. A results.json stating
-5.0 or 1e308 (hand-edited, its digest recomputed and signed again) states no score; it is refused as it is
read (ResultsDocError), and `recorder collect` names it among the results it skipped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from recorder.results.document import ResultsDocError

ACCURACY_RANGE = (0.0, 1.0)


def require_accuracies(scores: Mapping[str, object], where: str) -> None:
    """ResultsDocError naming the first score that is not a finite number in ACCURACY_RANGE."""
    low, high = ACCURACY_RANGE
    for task, score in scores.items():
        ok = isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score)
        if not (ok and low <= float(score) <= high):  # type: ignore[arg-type]
            raise ResultsDocError(
                f"{where}.{task}: {score!r} is no accuracy (a share of examples, in [{low:g}, {high:g}])"
            )
