"""The derived mllog as the page embeds it: whole up to EMBED_BYTES, else its first and last lines.

A million-event run's mllog is 90 MB; the page needs its line count and two ends, so only those are read
(the count in blocks, the tail from the end). The file itself stays under `derived/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

EMBED_BYTES = 1_000_000
HEAD, TAIL = 1000, 200
_BLOCK = 1 << 22


@dataclass(frozen=True)
class MllogExcerpt:
    """What the page shows of a derived mllog."""

    text: str  # embedded: the whole log, or its head, a line saying how many are left out, and its tail
    lines: int  # newline characters in the file
    size: int  # bytes
    whole: bool


def _newlines(path: Path) -> tuple[int, bool]:
    """(newlines in the file, whether it ends with one)."""
    count, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            count += block.count(b"\n")
            last = block[-1:]
    return count, last == b"\n"


def _tail(path: Path, size: int, lines: int) -> list[bytes]:
    """The last `lines` lines, read backwards in blocks."""
    if lines <= 0:
        return []
    data, start = b"", size
    with open(path, "rb") as f:
        while start > 0 and data.count(b"\n") <= lines:
            step = min(_BLOCK, start)
            start -= step
            f.seek(start)
            data = f.read(step) + data
    return data.splitlines(keepends=True)[-lines:]


def _head(path: Path, lines: int) -> list[bytes]:
    with open(path, "rb") as f:
        return [line for line in (f.readline() for _ in range(lines)) if line]


def read_excerpt(path: Path) -> MllogExcerpt:
    size = path.stat().st_size
    if size <= EMBED_BYTES:
        data = path.read_bytes()
        return MllogExcerpt(data.decode("utf-8"), data.count(b"\n"), size, True)
    newlines, terminated = _newlines(path)
    total = newlines + (0 if terminated else 1)
    head = _head(path, HEAD)
    tail = _tail(path, size, min(TAIL, total - len(head)))
    text = (
        b"".join(head).decode("utf-8", "replace")
        + f"... {total - len(head) - len(tail):,} lines not embedded ...\n"
        + b"".join(tail).decode("utf-8", "replace")
    )
    return MllogExcerpt(text, newlines, size, False)
