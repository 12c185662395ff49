"""A run's long series (steps, checkpoints) for `recorder report`, kept as Arrow columns and thinned for the
page with numpy, so a run of a million events never becomes a million Python objects.

A page shows at most a few thousand items: a timeline lane keeps MAX_ITEMS (those in the scored region
first, then an even sample of the rest), a curve MAX_POINTS (the lowest and highest point of each bucket,
so its envelope survives), a table MAX_ROWS (the rows asked for first, then the first ones). Only the
items kept become Python rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

MIN_NS = 60e9
MAX_ITEMS = 1500
MAX_POINTS = 4000
MAX_ROWS = 200

STEP_COLUMNS = pa.schema(
    [
        ("step", pa.int64()),
        ("weight_update_ns", pa.int64()),
        ("metrics_ns", pa.int64()),
        ("reward", pa.float64()),
    ]
)
CHECKPOINT_COLUMNS = pa.schema(
    [
        ("step", pa.int64()),
        ("sha256", pa.string()),
        ("bytes", pa.int64()),
        ("weight_update_ns", pa.int64()),
        ("save_begin_ns", pa.int64()),
        ("save_end_ns", pa.int64()),
        ("committed_ns", pa.int64()),
        ("blocked_s", pa.float64()),
        ("background_s", pa.float64()),
    ]
)


def minutes(column: pa.ChunkedArray | pa.Array, t0: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Nanoseconds since the epoch as minutes after t0 (NaN where null); exact until the division."""
    shifted = pc.subtract(column, pa.scalar(t0, pa.int64()))
    return np.asarray(
        pc.divide(pc.cast(shifted, pa.float64(), safe=False), MIN_NS).to_numpy(zero_copy_only=False), np.float64
    )


def end_ns(steps: pa.Table) -> pa.ChunkedArray:
    """When each step ended: its weight update, else its metrics (imported logs have no update)."""
    return pc.coalesce(steps["weight_update_ns"], steps["metrics_ns"])


def pick(at: np.ndarray[Any, np.dtype[np.float64]], lo: float, hi: float) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Indices to draw, ascending: all when few; else those at [lo, hi] first, then an even sample of the
    rest, MAX_ITEMS in all."""
    n = len(at)
    if n <= MAX_ITEMS:
        return np.arange(n, dtype=np.int64)
    inside = (at >= lo) & (at <= hi)
    first = np.flatnonzero(inside)[:MAX_ITEMS]
    outside = np.flatnonzero(~inside)
    room = min(MAX_ITEMS - len(first), len(outside))
    # evenly spaced over the rest, both ends included; spacing >= 1, so no index is drawn twice
    rest = outside[np.rint(np.linspace(0, len(outside) - 1, room)).astype(np.int64)] if room else outside[:0]
    return np.union1d(first, rest).astype(np.int64)


def thin(
    xs: np.ndarray[Any, np.dtype[np.float64]], ys: np.ndarray[Any, np.dtype[np.float64]]
) -> tuple[list[float], list[float]]:
    """At most MAX_POINTS points, in x order: each bucket's lowest and highest (the first of equals)."""
    if len(xs) <= MAX_POINTS:
        return xs.tolist(), ys.tolist()
    size = -(-len(xs) // (MAX_POINTS // 2))
    buckets = -(-len(xs) // size)
    pad = buckets * size - len(ys)
    low = np.concatenate([ys, np.full(pad, np.inf)]).reshape(buckets, size)
    high = np.concatenate([ys, np.full(pad, -np.inf)]).reshape(buckets, size)
    offsets = np.arange(buckets) * size
    keep = np.union1d(offsets + low.argmin(axis=1), offsets + high.argmax(axis=1))
    return xs[keep].tolist(), ys[keep].tolist()


def rows(table: pa.Table, indices: np.ndarray[Any, np.dtype[np.int64]]) -> list[dict[str, Any]]:
    """The chosen rows as dicts (the only place a series becomes Python objects)."""
    return table.take(pa.array(indices, pa.int64())).to_pylist() if len(indices) else []


def capped(table: pa.Table, wanted_steps: list[int], limit: int = MAX_ROWS) -> tuple[list[dict[str, Any]], int]:
    """At most `limit` rows in step order: those whose step is wanted (evaluated ones) first, then the first
    ones. Returns the rows and how many the table has."""
    n = table.num_rows
    if n <= limit:
        return table.to_pylist(), n
    wanted = np.asarray(pc.is_in(table["step"], pa.array(wanted_steps, pa.int64())).to_numpy(zero_copy_only=False))
    first = np.flatnonzero(wanted)[:limit]
    rest = np.flatnonzero(~wanted)[: limit - len(first)]
    return rows(table, np.union1d(first, rest).astype(np.int64)), n


def first_steps(table: pa.Table, count: int = 8) -> list[int]:
    return [int(s) for s in table["step"].slice(0, count).to_pylist()]


def bounds(values: np.ndarray[Any, np.dtype[np.float64]]) -> tuple[float, float] | None:
    """(min, max) of the values that are not NaN, or None."""
    finite = values[~np.isnan(values)]
    return (float(finite.min()), float(finite.max())) if len(finite) else None
