"""The check that a DCP tensor's chunks do not overlap is a sweep: the same verdict as comparing every pair,
with a number of comparisons that grows as n log n, not n squared (bench/hostile_inputs.py times it)."""

from __future__ import annotations

import math
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.checkpoints.torch_dcp.chunk_cover import Chunk, check_cover
from tests.kit.hostile_inputs import staircase_chunks
from trainer.policy.errors import CheckpointError


def _pairwise_overlap(chunks: list[Chunk]) -> bool:
    return any(
        all(
            a.offsets[d] < b.offsets[d] + b.sizes[d] and b.offsets[d] < a.offsets[d] + a.sizes[d]
            for d in range(len(a.sizes))
        )
        for a, b in combinations([c for c in chunks if c.numel], 2)
    )


def _chunks(ndim: int) -> st.SearchStrategy[tuple[tuple[int, ...], list[Chunk]]]:
    size = st.tuples(*[st.integers(1, 6)] * ndim)

    def inside(size: tuple[int, ...]) -> st.SearchStrategy[tuple[tuple[int, ...], list[Chunk]]]:
        def one(d: int) -> st.SearchStrategy[tuple[int, int]]:
            return st.integers(0, size[d]).flatmap(lambda o: st.tuples(st.just(o), st.integers(0, size[d] - o)))

        chunk = st.tuples(*[one(d) for d in range(ndim)]).map(
            lambda spans: Chunk(tuple(o for o, _ in spans), tuple(s for _, s in spans), "s", 0, 0)
        )
        return st.tuples(st.just(size), st.lists(chunk, max_size=8))

    return size.flatmap(inside)


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_the_sweep_gives_the_pairwise_verdict(ndim: int) -> None:
    @settings(max_examples=200, deadline=None)
    @given(_chunks(ndim))
    def same(case: tuple[tuple[int, ...], list[Chunk]]) -> None:
        size, chunks = case
        try:
            check_cover("m", "t", size, chunks)
            verdict = "cover"
        except CheckpointError as e:
            verdict = "overlap" if "overlap" in str(e) else "other"
        if _pairwise_overlap(chunks):
            assert verdict == "overlap"
        else:
            assert verdict == ("cover" if sum(c.numel for c in chunks) == math.prod(size) else "other")

    same()


def test_tiles_cut_from_a_grid_and_shifted_are_found_overlapping() -> None:
    grid = [Chunk((r, c), (2, 2), "s", 0, 0) for r in range(0, 8, 2) for c in range(0, 8, 2)]
    check_cover("m", "t", (8, 8), grid)
    shifted = [*grid[:-1], Chunk((5, 5), (2, 2), "s", 0, 0)]
    with pytest.raises(CheckpointError, match=r"chunks at \[4, [46]\] and \[5, 5\] overlap"):
        check_cover("m", "t", (8, 8), shifted)


class _Counted(int):
    """An offset that counts how often it is compared."""

    compared = 0

    def _count(self, other: object, op: str) -> bool:
        _Counted.compared += 1
        return bool(getattr(int(self), op)(other))

    def __lt__(self, other: object) -> bool:
        return self._count(other, "__lt__")

    def __le__(self, other: object) -> bool:
        return self._count(other, "__le__")

    def __gt__(self, other: object) -> bool:
        return self._count(other, "__gt__")

    def __ge__(self, other: object) -> bool:
        return self._count(other, "__ge__")


def test_a_staircase_of_chunks_takes_n_log_n_comparisons_not_n_squared() -> None:
    n = 2_000
    size, chunks = staircase_chunks(n)
    counted = [Chunk(tuple(map(_Counted, c.offsets)), c.sizes, c.shard, 0, 0) for c in chunks]
    _Counted.compared = 0
    check_cover("m", "t", size, counted)
    pairs = len(chunks) * (len(chunks) - 1) // 2
    assert _Counted.compared < 4 * len(chunks) * math.log2(len(chunks)) < pairs / 10, _Counted.compared
