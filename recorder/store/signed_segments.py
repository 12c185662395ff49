"""The signed list of a run's signed segments: `<run>/signed-segments.json`.

A signature covers one segment; nothing in a segment says which other segments exist. So deleting a signed
segment, or cutting a signed segment back to an earlier event, would leave every remaining signature valid.
Each signed writer therefore, as it closes, adds its segment to this file (name, event count, and the
closing record's digest) and signs the whole list with its key, under an exclusive lock on `events/` so
that writers closing together do not lose each other's entries. `recorder verify` requires, of a signed
run, that this file exists, that its signature is the run's key's, that every segment it lists is there
with exactly the events listed, and that every signed segment is listed.

A writer killed before it closed leaves its segment unsigned, perhaps with a torn tail. The signed writer
that resumes the run adopts that segment: it lists it as adopted, with the events it holds, the digest of
its last complete event and its size in bytes, so that verify accepts exactly those bytes (the
`adopted-segment` rule) and nothing appended after them.

What it cannot catch: a copy of an older manifest put back together with the deletion of every segment
signed after it (a rollback to an earlier, genuinely signed state of the run).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from recorder.errors import LogWriteError
from recorder.signing import Signer, message_signature_valid
from recorder.store import canonical
from recorder.store.run import RunDir
from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded

MANIFEST_FILE = "signed-segments.json"
DOMAIN = b"recorder signed-segments v1\n"
MANIFEST_LIMIT = 16 * 1024 * 1024  # ~100k segments; a larger file is not a manifest


@dataclass(frozen=True)
class Entry:
    """One signed segment as its writer closed it."""

    events: int  # counting the closing record (an adopted segment: its complete events)
    digest: str  # the closing record's digest (hex); an adopted segment: its last complete event's, or ""
    adopted_bytes: int | None = None  # set when a resuming writer adopted the segment: its size then

    def to_data(self) -> dict[str, int | str]:
        data: dict[str, int | str] = {"events": self.events, "digest": self.digest}
        if self.adopted_bytes is not None:  # absent otherwise: the lists signed before adoption still verify
            data["adopted_bytes"] = self.adopted_bytes
        return data


@dataclass(frozen=True)
class Manifest:
    """The file as read: the key that signed it last, its entries, and whether that signature verifies."""

    run_id: str
    public_key: str
    segments: Mapping[str, Entry]
    signature_valid: bool


def manifest_path(run: RunDir) -> Path:
    return run.path / MANIFEST_FILE


def _message(run_id: str, public_key: str, segments: Mapping[str, Entry]) -> bytes:
    body = {
        "run_id": run_id,
        "public_key": public_key,
        "segments": {n: e.to_data() for n, e in sorted(segments.items())},
    }
    return DOMAIN + canonical.dumps(body).encode()


class ManifestError(ValueError):
    """A manifest file that does not parse as one."""


def read_manifest(run: RunDir) -> Manifest | None:
    """The run's manifest; None when there is none; ManifestError when the file is not one (irregular, too
    large, not JSON, or missing its fields)."""
    path = manifest_path(run)
    if not os.path.lexists(path):
        return None
    try:
        data = canonical.loads(read_bounded(path, MANIFEST_LIMIT, "signed-segments manifest").decode())
        segments = {str(n): _entry(dict(e)) for n, e in dict(data["segments"]).items()}
        run_id, key, signature = str(data["run_id"]), str(data["public_key"]), data["signature"]
    except IrregularFileError as e:
        raise ManifestError(str(e).split(": ", 1)[-1]) from e
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError, UnicodeDecodeError) as e:
        raise ManifestError(f"not a signed-segments manifest ({type(e).__name__}: {e})") from e
    valid = message_signature_valid(key, signature, _message(run_id, key, segments))
    return Manifest(run_id, key, segments, valid)


def adopted_segments(run: RunDir) -> frozenset[str]:
    """The segments a signed manifest lists as adopted: their writers are gone, so they are not live, and
    verify holds them to the bytes listed. Empty when there is no manifest, or one that does not verify."""
    try:
        manifest = read_manifest(run)
    except ManifestError:
        return frozenset()
    if manifest is None or not manifest.signature_valid:
        return frozenset()
    return frozenset(n for n, e in manifest.segments.items() if e.adopted_bytes is not None)


def _entry(data: dict[str, object]) -> Entry:
    adopted = data.get("adopted_bytes")
    if adopted is not None and (not isinstance(adopted, int) or isinstance(adopted, bool)):
        raise TypeError(f"adopted_bytes {adopted!r} is not a size in bytes")
    return Entry(int(data["events"]), str(data["digest"]), adopted)  # type: ignore[call-overload]


def record_signed_segment(run: RunDir, run_id: str, signer: Signer, name: str, entry: Entry) -> None:
    """Add a just-closed signed segment to the run's manifest and sign it again (atomically, under a lock)."""
    path = manifest_path(run)
    dir_fd = os.open(run.events, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX)
        try:
            found = read_manifest(run)
        except ManifestError:
            found = None  # a damaged file is replaced; verify still sees any segment it no longer lists
        segments = dict(found.segments) if found is not None else {}
        segments[name] = entry
        key = signer.public_key_hex
        body = canonical.loads(_message(run_id, key, segments)[len(DOMAIN) :].decode())
        body["signature"] = signer.sign_message(_message(run_id, key, segments))
        _replace(path, (canonical.dumps(body) + "\n").encode())
    except OSError as e:
        raise LogWriteError(f"{path}: cannot record the signed segment {name} ({e.strerror})") from e
    finally:
        os.close(dir_fd)  # releases the lock


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
