"""Compaction: a closed run's events as one Parquet file, a cache the segments can always rebuild.

`derived/events.parquet` holds every event of the run (the event columns plus `segment`) and
`derived/events.manifest.json` names the segments it was built from, with their sizes. A closed segment
never changes, so the cache is fresh exactly when the segments on disk are the ones in the manifest: the
history checks that with one directory listing per run instead of opening the Parquet file.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from recorder.errors import DataError, RecorderError
from recorder.store.reader import read_run, recorded_run_id
from recorder.store.run import RunDir, derived_dir
from recorder.store.segment import list_segments

PARQUET_NAME = "events.parquet"
MANIFEST_NAME = "events.manifest.json"
MANIFEST_VERSION = 1


class CompactError(DataError):
    """A run that cannot be compacted: open, torn or altered segments."""


@dataclass(frozen=True)
class CompactResult:
    """What `compact_run` did with one run."""

    run_id: str
    status: Literal["compacted", "fresh", "live"]  # fresh: already up to date; live: a segment is still open
    events: int
    reason: str = ""


def parquet_path(run: RunDir) -> Path:
    return run.derived / PARQUET_NAME


def manifest_path(run: RunDir) -> Path:
    return run.derived / MANIFEST_NAME


def _segment_sizes(run: RunDir) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in list_segments(run.events)}


def read_manifest(run: RunDir) -> dict[str, Any] | None:
    """The manifest of the run's compacted file, or None if there is none (or it is unreadable)."""
    try:
        manifest = json.loads(manifest_path(run).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("version") == MANIFEST_VERSION else None


def fresh_manifest(run: RunDir) -> dict[str, Any] | None:
    """The manifest of the run's compacted file if it matches the segments on disk now; else None.

    Costs one listing of events/ and one small JSON read: the history calls it for every run. Sizes, not
    contents, are compared: a closed segment never changes, and in-place tampering is `verify`'s job.
    """
    manifest = read_manifest(run)
    if manifest is None or not isinstance(manifest.get("events"), int) or not parquet_path(run).is_file():
        return None
    return manifest if manifest.get("segments") == _segment_sizes(run) else None


def manifest_run_id(run: RunDir, manifest: dict[str, Any]) -> str:
    """The run's recorded id as its compaction noted it in a fresh manifest (the compacted rows carry the
    same id), so that a history of 10,000 compacted runs opens no segment for it; read from the segments for
    a manifest written before the note."""
    noted = manifest.get("run_id")
    return noted if isinstance(noted, str) else recorded_run_id(run)


def _atomic_write(path: Path, write: object) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)  # a symlink planted there is removed, never written through
    write(tmp)  # type: ignore[operator]
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def compact_run(run_dir: Path | RunDir, *, force: bool = False) -> CompactResult:
    """Write `derived/events.parquet` for a closed run. A live run is skipped; a damaged one raises."""
    from recorder.store.signed_segments import adopted_segments
    from recorder.verify import verify_run

    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    if not force and (manifest := fresh_manifest(run)) is not None:
        return CompactResult(manifest_run_id(run, manifest), "fresh", manifest["events"])
    run_id = recorded_run_id(run)
    sizes = _segment_sizes(run)  # before reading: a segment that grows meanwhile makes the cache stale
    report = verify_run(run, facts=False)  # the cache copies bytes; replay and eval judge the facts
    if not report.ok:
        raise CompactError(f"{run.path}: not compacted, `recorder verify {run.path}` fails: {report.problems[0]}")
    adopted = adopted_segments(run)  # left open by a killed writer, held to their bytes by verify
    open_segments = [s.name for s in report.segments if not s.closed and s.name not in adopted]
    if open_segments:
        return CompactResult(
            run_id, "live", sum(s.events for s in report.segments), f"segment {open_segments[0]} is still open"
        )
    table = read_run(run).table()
    derived_dir(run)  # refuses a derived/ that is a symlink out of the run
    _atomic_write(parquet_path(run), lambda p: pq.write_table(table, p, compression="zstd"))
    manifest = {"version": MANIFEST_VERSION, "events": table.num_rows, "segments": sizes, "run_id": run_id}
    _atomic_write(manifest_path(run), lambda p: p.write_text(json.dumps(manifest, indent=1) + "\n"))
    return CompactResult(run_id, "compacted", table.num_rows)


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
        problems.append(
            f"{path}: stale, the segments changed since compaction (the history reads the "
            "segments instead); run `recorder compact` again"
        )
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
            row = next(i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b)
            problems.append(
                f"{path}: column {name!r} differs from segment {want_segment(truth, row)} at row "
                f"{row}: {got[row]!r} != {want[row]!r}"
            )
            break
    return problems


def want_segment(table: pa.Table, row: int) -> str:
    seg, seq = table.column("segment")[row].as_py(), table.column("seq")[row].as_py()
    return f"{seg} seq {seq}"


# Packs: with thousands of runs, opening one Parquet file per run per scan dominates every query (about
# 0.2 ms a file a scan: 2 s at 10,000 runs). `recorder compact` therefore also packs the compacted runs of a
# root under `<root>/.history/pack-N/`, one file per event kind (`kind=K/data_0.parquet`), rows grouped by
# run inside. Per kind, because a view about checkpoints or evaluations needs the `data` of a few
# thousand rows among a hundred million: Parquet statistics then skip every file of another kind instead
# of decompressing its `data` column (measured: 1 s per 10 million events otherwise).
# `packs.json` records, per run, the segment sizes its rows came from: a run whose segments changed since
# is read from its own fresher file (or its segments) and its old rows in the pack are filtered out.
PACK_DIR = ".history"
PACK_INDEX = "packs.json"
MAX_PACKS = 8


@dataclass(frozen=True)
class Pack:
    """One pack (a folder of Parquet files, one per kind) and the runs it holds: run_id -> the segment
    sizes they were compacted from."""

    path: Path
    runs: dict[str, dict[str, int]]

    def files(self) -> list[Path]:
        return sorted(self.path.glob("kind=*/*.parquet"))


def read_packs(root: Path) -> list[Pack]:
    """The packs of a root ([] if none, or if the index is unreadable: packs are only a cache)."""
    try:
        index = json.loads((root / PACK_DIR / PACK_INDEX).read_text())
        return [
            Pack(root / PACK_DIR / p["folder"], p["runs"])
            for p in index["packs"]
            if (root / PACK_DIR / p["folder"]).is_dir()
        ]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return []


def pack_root(root: Path, *, threads: int | None = None) -> tuple[int, int]:
    """Pack the root's freshly compacted runs; returns (runs newly packed, packs now)."""
    import duckdb

    from recorder.store.run import list_runs

    fresh: dict[str, tuple[Path, dict[str, int]]] = {}
    for run in list_runs(root):
        if (manifest := fresh_manifest(run)) is not None:
            # keyed by the id the pack's rows carry; a second folder recording the same id is not packed
            fresh.setdefault(manifest_run_id(run, manifest), (parquet_path(run), manifest["segments"]))
    packs = read_packs(root)
    valid = {r for p in packs for r, segs in p.runs.items() if r in fresh and fresh[r][1] == segs}
    stale = sum(len(p.runs) for p in packs) - len(valid)
    todo = sorted(set(fresh) - valid)
    if not todo and not stale:
        return 0, len(packs)
    if stale or len(packs) >= MAX_PACKS:  # rewrite everything into one pack
        todo, packs = sorted(fresh), []
    pack_dir = root / PACK_DIR
    pack_dir.mkdir(exist_ok=True)
    name = f"pack-{time.time_ns()}"
    files = ", ".join("'" + str(fresh[r][0]).replace("'", "''") + "'" for r in todo)
    con = duckdb.connect(config={"threads": threads or os.cpu_count() or 1, "preserve_insertion_order": True})
    try:
        # Files in run order and insertion order kept: rows stay grouped by run, so row-group statistics
        # let a query about one run skip most of the others.
        con.execute(
            f"COPY (SELECT * FROM read_parquet([{files}])) TO '{pack_dir / (name + '.tmp')}' "
            "(FORMAT parquet, COMPRESSION zstd, PARTITION_BY (kind), WRITE_PARTITION_COLUMNS true)"
        )
    finally:
        con.close()
    os.replace(pack_dir / (name + ".tmp"), pack_dir / name)
    packs.append(Pack(pack_dir / name, {r: fresh[r][1] for r in todo}))
    index = {"version": 1, "packs": [{"folder": p.path.name, "runs": p.runs} for p in packs]}
    _atomic_write(pack_dir / PACK_INDEX, lambda p: p.write_text(json.dumps(index) + "\n"))
    keep = {p.path.name for p in packs} | {PACK_INDEX}
    for old in pack_dir.iterdir():
        if old.name not in keep:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    return len(todo), len(packs)
