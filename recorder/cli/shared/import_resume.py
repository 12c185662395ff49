"""Running `recorder import` again after it was stopped: the files it already imported are skipped, and said.

A file counts as imported when the run its import would make (its default id under the root) holds one closed
import segment whose run records that very file as its source. An import stopped mid-file leaves no run (it
removes it) or, killed outright, an unclosed segment: that file is imported again, not skipped, and its
half-written run is the user's to remove (nothing here deletes it).
"""

from __future__ import annotations

from pathlib import Path

from recorder.errors import RecorderError


def already_imported(path: Path, root: Path) -> Path | None:
    """The run an earlier `recorder import` made of `path` under `root`, whole; None when there is none."""
    from recorder.adapters.mllog_import import WRITER, default_run_id

    run = root / default_run_id(path)
    segments = sorted((run / "events").glob(f"{WRITER}-*.arrows")) if (run / "events").is_dir() else []
    if len(segments) != 1:
        return None
    return run if _imported_whole(segments[0], str(path)) else None


def _imported_whole(segment: Path, source: str) -> bool:
    from recorder.store.reader import stream_events

    recorded, closed = None, False
    try:
        for e in stream_events(segment):
            if e.kind == "run_opened" and recorded is None:
                provenance = (e.data or {}).get("provenance") or {}
                recorded = provenance.get("imported_from") if isinstance(provenance, dict) else None
            closed = e.kind == "segment_closed"
    except (RecorderError, OSError):  # a damaged segment is no proof of an import: the file is imported again
        return False
    return closed and recorded == source
