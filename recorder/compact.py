"""Compaction: a closed run's events as one Parquet file, a cache the segments can always rebuild.

`derived/events.parquet` holds every event of the run (the event columns plus `segment`) and
`derived/events.manifest.json` names the segments it was built from, with their sizes. A closed segment
never changes, so the cache is fresh exactly when the segments on disk are the ones in the manifest: the
history checks that with one directory listing per run instead of opening the Parquet file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from recorder.errors import DataError, RecorderError
from recorder.reader import read_run
from recorder.run import RunDir
from recorder.segment import list_segments

PARQUET_NAME = "events.parquet"
MANIFEST_NAME = "events.manifest.json"
MANIFEST_VERSION = 1


class CompactError(DataError):
    """A run that cannot be compacted: open, torn or altered segments."""


@dataclass(frozen=True)
class CompactResult:
    """What `compact_run` did with one run."""

    run_id: str
    status: str  # "compacted" | "fresh" (already up to date) | "live" (a segment is still open)
    events: int
    reason: str = ""


def parquet_path(run: RunDir) -> Path:
    return run.derived / PARQUET_NAME


def manifest_path(run: RunDir) -> Path:
    return run.derived / MANIFEST_NAME


def _segment_sizes(run: RunDir) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in list_segments(run.events)}


def read_manifest(run: RunDir) -> dict[str, object] | None:
    """The manifest of the run's compacted file, or None if there is none (or it is unreadable)."""
    try:
        manifest = json.loads(manifest_path(run).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("version") == MANIFEST_VERSION else None


def fresh_parquet(run: RunDir) -> tuple[Path, int] | None:
    """(path, events) of the compacted file if it matches the segments on disk now; else None.

    Costs one listing of events/ and one small JSON read: the history calls it for every run.
    """
    manifest = read_manifest(run)
    if manifest is None or not parquet_path(run).is_file():
        return None
    if manifest.get("segments") != _segment_sizes(run):
        return None
    events = manifest.get("events")
    return (parquet_path(run), events) if isinstance(events, int) else None


def _atomic_write(path: Path, write: object) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)  # type: ignore[operator]
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def compact_run(run_dir: Path | RunDir, *, force: bool = False) -> CompactResult:
    """Write `derived/events.parquet` for a closed run. A live run is skipped; a damaged one raises."""
    from recorder.verify import verify_run

    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    if not force and (fresh := fresh_parquet(run)) is not None:
        return CompactResult(run.run_id, "fresh", fresh[1])
    sizes = _segment_sizes(run)  # before reading: a segment that grows meanwhile makes the cache stale
    report = verify_run(run)
    if not report.ok:
        raise CompactError(f"{run.path}: not compacted, `recorder verify {run.path}` fails: {report.problems[0]}")
    open_segments = [s.name for s in report.segments if not s.closed]
    if open_segments:
        return CompactResult(run.run_id, "live", sum(s.events for s in report.segments),
                             f"segment {open_segments[0]} is still open")
    table = read_run(run).table()
    run.derived.mkdir(exist_ok=True)
    _atomic_write(parquet_path(run), lambda p: pq.write_table(table, p, compression="zstd"))
    manifest = {"version": MANIFEST_VERSION, "events": table.num_rows, "segments": sizes}
    _atomic_write(manifest_path(run), lambda p: p.write_text(json.dumps(manifest, indent=1) + "\n"))
    return CompactResult(run.run_id, "compacted", table.num_rows)


def check_compacted(run_dir: Path | RunDir) -> list[str]:
    """Problems of the run's compacted file against its segments (the truth); [] if none or no file.

    For `recorder verify`: the Parquet rows must equal the segments' events, column by column.
    """
    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    path = parquet_path(run)
    if not path.exists():
        return []
    manifest = read_manifest(run)
    problems: list[str] = []
    if manifest is None:
        problems.append(f"{manifest_path(run)}: missing or unreadable; run `recorder compact` again")
    elif manifest.get("segments") != _segment_sizes(run):
        problems.append(f"{path}: stale, the segments changed since compaction (the history reads the "
                        "segments instead); run `recorder compact` again")
    try:
        cached = pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        return [*problems, f"{path}: unreadable Parquet ({e}); delete it and run `recorder compact`"]
    try:
        truth = read_run(run).table()
    except RecorderError as e:
        return [*problems, f"{path}: cannot compare, the segments are damaged: {e}"]
    if cached.schema.names != truth.schema.names:
        return [*problems, f"{path}: columns {cached.schema.names} differ from the event columns"]
    if cached.num_rows != truth.num_rows:
        problems.append(f"{path}: {cached.num_rows} events, the segments hold {truth.num_rows}")
        return problems
    for name in truth.schema.names:
        if not cached.column(name).equals(truth.column(name).cast(cached.schema.field(name).type)):
            got, want = cached.column(name).to_pylist(), truth.column(name).to_pylist()
            row = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
            problems.append(f"{path}: column {name!r} differs from segment {want_segment(truth, row)} at row "
                            f"{row}: {got[row]!r} != {want[row]!r}")
            break
    return problems


def want_segment(table: pa.Table, row: int) -> str:
    seg, seq = table.column("segment")[row].as_py(), table.column("seq")[row].as_py()
    return f"{seg} seq {seq}"
