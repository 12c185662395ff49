"""`derived/state.json`: what each derived file was derived from, and the events `recorder verify` found intact.

Everything under `derived/` is a cache of the events. A cache is only wrong when it claims the events as
they are now and disagrees with them; a cache derived from fewer events (the run was evaluated, resumed or
imported into since) is stale, which is no alarm. So each writer of a derived file records beside it the
events it read: every segment's last seq and last digest (the head of its chain), with the ruleset and the
versions that derived it. A command that appends events thereby invalidates every cache at once (the heads
move), without touching the caches. The same record holds the last verdict of `recorder verify` on the run
(the heads and sizes it found intact), so that a reader of a large run need not verify it again while its
segments are unchanged in size.

The file is anyone's to edit, like the caches: a forged record can make a cache look stale (then it is
re-derived, never shown), and one that claims the current events is checked against them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from recorder import __version__
from recorder.errors import RecorderError
from recorder.store.run import RunDir, derived_dir, write_derived
from recorder.untrusted.untrusted_files import is_regular

STATE_FILE = "state.json"
STATE_LIMIT = 4 * 1024 * 1024  # a few hundred bytes per segment and derived file
Heads = Mapping[str, tuple[int, str]]  # segment file name -> (its last event's seq, that event's digest)
Claim = Literal["current", "stale", "unrecorded"]


def state_path(run: RunDir) -> Path:
    return run.derived / STATE_FILE


def read_state(run: RunDir) -> dict[str, Any]:
    """The run's record, {} when there is none or it is not a readable JSON object."""
    path = state_path(run)
    try:
        if not is_regular(path) or path.stat().st_size > STATE_LIMIT:
            return {}
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(run: RunDir, state: dict[str, Any]) -> None:
    write_derived(derived_dir(run) / STATE_FILE, (json.dumps(state, sort_keys=True, indent=1) + "\n").encode())


def _heads_json(heads: Heads) -> dict[str, list[object]]:
    return {segment: [seq, digest] for segment, (seq, digest) in sorted(heads.items())}


def record_derived(run: RunDir, name: str, heads: Heads, **about: object) -> None:
    """Say that `derived/<name>` was just written from the events whose heads are `heads` (`about`: the
    ruleset and versions it depends on). Written after the file itself, so that a crash between the two
    leaves the older record: the file then reads as stale, never as a forgery."""
    state = read_state(run)
    derived: dict[str, Any] = state["derived"] if isinstance(state.get("derived"), dict) else {}
    derived[name] = {"events": _heads_json(heads), "recorder": __version__, **about}
    state["derived"] = derived
    _write_state(run, state)


def derived_record(run: RunDir, name: str) -> dict[str, Any] | None:
    """What `derived/<name>` was derived from, as recorded (None: nothing recorded)."""
    derived = read_state(run).get("derived")
    record = derived.get(name) if isinstance(derived, dict) else None
    return record if isinstance(record, dict) else None


def claim(run: RunDir, name: str, heads: Heads, **about: object) -> Claim:
    """Whether `derived/<name>` claims the events whose heads are `heads` (and `about`'s values and this
    recorder's version): 'current'; was derived from other events or by another version: 'stale'; or
    records nothing (written before the record existed): 'unrecorded', held to the current events."""
    record = derived_record(run, name)
    if record is None:
        return "unrecorded"
    same = record.get("events") == _heads_json(heads) and record.get("recorder") == __version__
    same = same and all(record.get(key) == value for key, value in about.items())
    return "current" if same else "stale"


def stale_note(run: RunDir, name: str, heads: Heads) -> str:
    """One line saying what a stale cache was derived from and what the run holds now."""
    record = derived_record(run, name) or {}
    then: dict[str, Any] = record["events"] if isinstance(record.get("events"), dict) else {}
    was = sum(v[0] + 1 for v in then.values() if isinstance(v, list) and v and isinstance(v[0], int))
    now = sum(seq + 1 for seq, _ in heads.values())
    version = record.get("recorder")
    by = f" by recorder {version}" if version != __version__ else ""
    segments = f"{len(then)} segment{'' if len(then) == 1 else 's'}"
    return (
        f"derived/{name}: stale, derived{by} from {was} events in {segments}; the run now holds "
        f"{now} in {len(heads)} (a cache, not the record: `recorder replay {run.path}` refreshes it)"
    )


def record_verified(run: RunDir, segments: Mapping[str, tuple[int, str, int]]) -> None:
    """Keep `recorder verify`'s intact verdict: each segment's (events, last digest, size in bytes before it
    was read, sha256 of its bytes). Best effort: a run on a read-only filesystem is verified all the same."""
    state = read_state(run)
    kept = {}
    for name, v in sorted(segments.items()):
        digest = _file_sha256(run.events / name, v[2])
        if digest is None:  # changed since it was read: no verdict is kept for it
            return
        kept[name] = [*v, digest]
    state["verified"] = {"recorder": __version__, "segments": kept}
    try:
        _write_state(run, state)
    except (RecorderError, OSError):
        pass


def verified_unchanged(run: RunDir) -> int | None:
    """The number of events `recorder verify` found intact, if every segment still has the size it had then
    (and no segment came or went); None otherwise. A segment is only ever appended to, so an unchanged size
    means no event was added; in-place tampering is what only `recorder verify` itself rules out."""
    verified = read_state(run).get("verified")
    if not isinstance(verified, dict) or verified.get("recorder") != __version__:
        return None
    segments = verified.get("segments")
    if not isinstance(segments, dict):
        return None
    try:
        sizes = {p.name: p.stat().st_size for p in run.events.iterdir() if p.suffix == ".arrows"}
    except OSError:
        return None
    if set(sizes) != set(segments):
        return None
    events = 0
    for name, v in segments.items():
        if not (isinstance(v, list) and len(v) == 4 and isinstance(v[0], int) and v[2] == sizes[name]):
            return None
        events += v[0]
    for name, v in segments.items():  # the bytes themselves: an in-place edit keeps the size
        if _file_sha256(run.events / name, v[2]) != v[3]:
            return None
    return events


def _file_sha256(path: Path, size: object) -> str | None:
    """sha256 of a segment's bytes (a regular file, never followed, read in chunks); None when it is not `size`
    bytes long or cannot be read. Hashing is a read at disk speed, where verifying re-decodes and re-chains
    every event."""
    import hashlib
    import os
    import stat

    if not isinstance(size, int):
        return None
    digest, read = hashlib.sha256(), 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        while read <= size and (chunk := f.read(1 << 20)):
            digest.update(chunk)
            read += len(chunk)
    return digest.hexdigest() if read == size else None
