"""Trainer tests run torch on one thread: the tiny models are op-overhead bound, and a second thread
spinning on a shared 2-core machine made them several times slower (measured)."""

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread() -> Iterator[None]:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
