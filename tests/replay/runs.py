"""Synthetic runs for replay tests: `tests.kit.synthetic` records them; here, the golden cases."""

from __future__ import annotations

from tests.kit.synthetic import CLOSED_256, T0, T0_S, S, record_evals, record_run, validation_start

__all__ = ["CASES", "CLOSED_256", "S", "T0", "T0_S", "record_evals", "record_run", "validation_start"]

# The golden cases: (name, evaluations performed in order, extra keyword arguments).
CASES: dict[str, dict[str, object]] = {
    "val_start_pass": {"evals": [(4, 0.70)]},
    "later_pass": {"evals": [(4, 0.60), (5, 0.65), (6, 0.72)]},
    "aborted": {"evals": [(4, 0.60), (5, 0.65), (6, 0.68)]},
    "descending": {"evals": [(6, 0.75), (5, 0.71), (4, 0.66)]},
    "arbitrary_order": {"evals": [(5, 0.72), (4, 0.70), (6, 0.71)]},
    "several_passing": {"evals": [(4, 0.69), (5, 0.71), (6, 0.80)]},
    "late_metrics": {"evals": [(4, 0.60), (5, 0.70)], "last_metrics_s": 405},
}
