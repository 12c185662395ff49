"""The RCP checker's reference data, loaded and prepared once per process instead of once per result set.

mlperf-logging's `check_directory` builds an `RCP_Checker` for every set it checks: it reads the
benchmark's `rcps_<benchmark>.json` and, for every reference point, binary-searches the minimum acceptable
mean with a t-test per step (about a quarter of the check's time on a typical set). While `prepared_once()`
is active, `check_directory` gets a copy of the checker prepared the first time for that usage, ruleset
and benchmark; the submission's own epochs, the interpolation and the verdict are computed as always.

Why a copy: `_eval_submission_record` writes into the reference record it is given (llama31_405b's
`Max Speedup`), so no set sees what an earlier set left.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_prepared: dict[tuple[Any, ...], Any] = {}
_lock = threading.Lock()


@contextmanager
def prepared_once(checker_module: Any) -> Iterator[None]:
    """While active, `checker_module` (mlperf-logging's `rcp_checker`) prepares each RCP file once."""
    real = checker_module.RCP_Checker

    def cached(usage: str, ruleset: str, benchmark: str, verbose: bool, rcp_file: Any = None) -> Any:
        if rcp_file is not None:  # a file the caller opened: read as given, every time
            return real(usage, ruleset, benchmark, verbose, rcp_file)
        key = (usage, ruleset, benchmark, bool(verbose))
        with _lock:
            if key not in _prepared:
                _prepared[key] = real(usage, ruleset, benchmark, verbose)
            return copy.deepcopy(_prepared[key])

    checker_module.RCP_Checker = cached
    try:
        yield
    finally:
        checker_module.RCP_Checker = real
