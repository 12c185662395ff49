"""One torch thread in evaluator tests: the machine's 2 cores are shared, and oversubscribed threads make a
tiny model's matmuls ten times slower. (Scores do not depend on it: see test_invariance.py.)"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> None:
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)
