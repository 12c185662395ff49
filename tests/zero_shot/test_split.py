"""How one checkpoint's requests are shared among --nproc processes: contiguous, in order, none empty, sizes
within one of each other."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evaluator.zero_shot.split import shares


@given(st.lists(st.integers(), max_size=50), st.integers(min_value=1, max_value=9))
def test_shares_are_the_requests_in_order_in_balanced_contiguous_parts(items: list[int], n: int) -> None:
    parts = shares(items, n)
    assert [x for part in parts for x in part] == items
    assert len(parts) == min(n, len(items)) and all(parts)
    assert max(map(len, parts), default=0) - min(map(len, parts), default=0) <= 1
