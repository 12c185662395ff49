"""How one checkpoint's requests are shared among --nproc processes: contiguous, in order, none empty, cut
where the unsplit batches are cut, with batch counts within one of each other."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evaluator.zero_shot.split import shares


@given(st.lists(st.integers(), max_size=50), st.integers(min_value=1, max_value=9), st.integers(1, 7))
def test_shares_are_the_requests_in_order_cut_at_the_batches_one_process_forms(
    items: list[int], n: int, batch: int
) -> None:
    parts = shares(items, n, batch)
    assert [x for part in parts for x in part] == items
    batches = -(-len(items) // batch)
    assert len(parts) == min(n, batches) and all(parts)
    starts = [sum(map(len, parts[:i])) for i in range(len(parts))]
    assert all(start % batch == 0 for start in starts)  # each share begins where a batch of the whole begins
    counts = [-(-len(p) // batch) for p in parts]
    assert max(counts, default=0) - min(counts, default=0) <= 1
