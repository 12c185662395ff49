"""The thinning `recorder report` applies to long runs (report_series) and the mllog excerpt it embeds
(report_mllog): checked against plain-Python statements of the same rules, and on real files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder.report.long_series import MAX_ITEMS, MAX_POINTS, capped, pick, thin
from recorder.report.mllog_excerpt import EMBED_BYTES, HEAD, TAIL, read_excerpt


def thin_by_hand(ys: list[float]) -> list[int]:
    """Each bucket's first lowest and first highest point, buckets of ceil(n / (MAX_POINTS / 2))."""
    if len(ys) <= MAX_POINTS:
        return list(range(len(ys)))
    size = -(-len(ys) // (MAX_POINTS // 2))
    keep: set[int] = set()
    for start in range(0, len(ys), size):
        bucket = range(start, min(start + size, len(ys)))
        keep |= {min(bucket, key=lambda i: ys[i]), max(bucket, key=lambda i: ys[i])}
    return sorted(keep)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 30_000), st.integers(0, 2**32 - 1), st.integers(1, 50))
def test_thin_keeps_each_buckets_low_and_high(n: int, seed: int, levels: int) -> None:
    ys = np.random.default_rng(seed).integers(0, levels, n).astype(np.float64)  # few levels: many ties
    xs = np.arange(n, dtype=np.float64)
    got_x, got_y = thin(xs, ys)
    want = thin_by_hand(ys.tolist())
    assert got_x == [float(i) for i in want] and got_y == [ys[i] for i in want]
    assert len(got_x) <= MAX_POINTS
    if n:
        assert min(got_y) == ys.min() and max(got_y) == ys.max()  # the envelope survives


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 20_000), st.floats(0, 1), st.floats(0, 1))
def test_pick_draws_the_scored_region_first(n: int, a: float, b: float) -> None:
    at = np.linspace(0.0, 1.0, n)
    lo, hi = min(a, b), max(a, b)
    got = pick(at, lo, hi)
    assert list(got) == sorted(set(got.tolist())) and len(got) == min(n, MAX_ITEMS)  # the whole budget
    inside = np.flatnonzero((at >= lo) & (at <= hi))
    assert set(inside[:MAX_ITEMS].tolist()) <= set(got.tolist())  # the scored region before any sample


def test_capped_table_rows_put_the_wanted_steps_first() -> None:
    table = pa.table({"step": pa.array(range(1, 1001), pa.int64())})
    rows, total = capped(table, [999, 5], limit=10)
    assert total == 1000 and [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 999]
    rows, total = capped(table.slice(0, 10), [999], limit=10)
    assert [r["step"] for r in rows] == list(range(1, 11))


def _log(path: Path, lines: int, end: str = "\n") -> list[str]:
    text = [f':::MLLOG {{"key": "line", "value": {i}, "pad": "{"x" * 120}"}}' for i in range(lines)]
    path.write_text("\n".join(text) + end, encoding="utf-8")
    return [t + "\n" for t in text]


def test_a_large_mllog_is_embedded_as_its_two_ends(tmp_path: Path) -> None:
    written = _log(tmp_path / "big.txt", 20_000)
    assert (tmp_path / "big.txt").stat().st_size > EMBED_BYTES
    got = read_excerpt(tmp_path / "big.txt")
    skipped = 20_000 - HEAD - TAIL
    assert not got.whole and got.lines == 20_000
    assert got.text == "".join(written[:HEAD]) + f"... {skipped:,} lines not embedded ...\n" + "".join(written[-TAIL:])


def test_a_large_mllog_without_a_last_newline_keeps_its_last_line(tmp_path: Path) -> None:
    written = _log(tmp_path / "cut.txt", 20_000, end="")
    got = read_excerpt(tmp_path / "cut.txt")
    assert got.lines == 19_999 and got.text.endswith(written[-1][:-1])
    assert got.text.count("\n") == HEAD + 1 + TAIL - 1


def test_a_small_mllog_is_embedded_whole(tmp_path: Path) -> None:
    written = _log(tmp_path / "small.txt", 50)
    got = read_excerpt(tmp_path / "small.txt")
    assert got.whole and got.text == "".join(written) and got.lines == 50
