"""plotly.js as the page carries it: gzip-compressed and base64-encoded (1.9 MB instead of 4.8 MB).

Compressing it costs 0.2 s of CPU a report, so the result is kept in the user's cache folder, under the
SHA-256 of the plotly.min.js it came from. A kept copy is used only after it has been unpacked and found
to hash to exactly that file: a cache anyone else wrote cannot put other JavaScript into a report.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import os
import zlib
from pathlib import Path


def cache_folder() -> Path:
    """$RECORDER_CACHE, else $XDG_CACHE_HOME/recorder, else ~/.cache/recorder."""
    if os.environ.get("RECORDER_CACHE"):
        return Path(os.environ["RECORDER_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "recorder"


def _kept(path: Path, sha256: str) -> str | None:
    """The kept encoding, if it unpacks to the file whose SHA-256 is `sha256`."""
    try:
        text = path.read_text(encoding="ascii")
        unpacked = gzip.decompress(base64.b64decode(text, validate=True))
    except (OSError, ValueError, binascii.Error, EOFError, zlib.error):
        return None
    return text if hashlib.sha256(unpacked).hexdigest() == sha256 else None


def encoded(js: Path) -> str:
    """`js` gzip-compressed and base64-encoded, from the cache when a verified copy is there."""
    data = js.read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    path = cache_folder() / f"plotly-{sha256[:32]}.js.gz.b64"
    text = _kept(path, sha256)
    if text is not None:
        return text
    text = base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode("ascii")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="ascii")
        os.replace(tmp, path)
    except OSError:  # a read-only or full home: the page is the same, only slower to write next time
        pass
    return text
