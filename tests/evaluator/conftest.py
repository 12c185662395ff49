"""One torch thread in evaluator tests: the machine's 2 cores are shared, and oversubscribed threads make a
tiny model's matmuls ten times slower. (Scores do not depend on it: see test_invariance.py.) Restored after
each module, so other areas' tests keep their setting."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread() -> Iterator[None]:
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
