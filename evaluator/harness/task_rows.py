"""A task's data read once: its files' bytes, hashed, parsed into the rows lm-eval scores.

The datasets library keeps a cache of a local file keyed by its path and modification time, so rows it had
cached from other bytes (a cache written beside doctored data, the honest file then put back with its old
mtime) were scored while the honest file's hashes were recorded. Here each file is read once through the
bounded reader (a regular file only; a FIFO or device refused at once; its size checked before reading), the
recorded sha256 is that of those bytes, the content hash that of the rows parsed from them, and lm-eval is
handed those same rows in memory (`custom_dataset`): no cache and no second read between hashing and scoring.

Rows are parsed strictly: a JSON object with a key given twice (which one lm-eval would read is not for the
reader to guess), NaN or Infinity, a string holding a lone surrogate (it has no UTF-8 form, so it cannot be
hashed as it is), or a line that is not an object is refused naming the file and the line.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.harness.errors import TaskDataError
from recorder.untrusted.bounded_documents import unique_keys
from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded

FILE_LIMIT = 512 * 1024**2  # one file of a task's split; the largest of the seven (HellaSwag) is about 50 MB


@dataclass(frozen=True, slots=True)
class TaskRows:
    """The rows of a task's split as read once, and the two hashes of what was read."""

    rows: tuple[dict[str, Any], ...]
    data_sha256: str  # of the file's bytes; of its files' "name sha256" lines for a split in several files
    content_sha256: str  # of the rows, one canonical JSON line each (evaluator.harness.task_content)
    table: Any = None  # the Arrow table itself, for a datasets copy: lm-eval gets the columns' own types


def read_rows(files: list[Path], builder: str) -> TaskRows:
    """Read `files` (JSON lines, or `builder` "arrow": Arrow stream files of a datasets split) once;
    TaskDataError naming the file (and line) for anything that is not plain rows."""
    blobs = [(f, _read(f)) for f in files]
    if len(blobs) == 1:
        data_sha256 = hashlib.sha256(blobs[0][1]).hexdigest()
    else:
        lines = "".join(f"{f.name} {hashlib.sha256(b).hexdigest()}\n" for f, b in blobs)
        data_sha256 = hashlib.sha256(lines.encode()).hexdigest()
    digest = hashlib.sha256()
    rows: list[dict[str, Any]] = []
    tables = []
    for f, blob in blobs:
        if builder == "arrow":
            table, parsed = _arrow_rows(f, blob)
            tables.append(table)
        else:
            parsed = _json_rows(f, blob)
        for where, row in parsed:
            digest.update(canonical_line(row, f"{f}{where}"))
            rows.append(row)
    table = None
    if tables:
        import pyarrow as pa

        table = pa.concat_tables(tables)
    return TaskRows(tuple(rows), data_sha256, digest.hexdigest(), table)


def canonical_line(row: Any, where: str) -> bytes:
    """A row as its content hash takes it: canonical JSON (keys sorted, no spaces, UTF-8) and a newline."""
    text = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError as e:
        bad = e.object[e.start : e.end].encode("unicode_escape").decode()
        raise TaskDataError(f"{where}: a string holds a lone surrogate ({bad}): not text; fix the row") from None


def _read(path: Path) -> bytes:
    try:
        return read_bounded(path, FILE_LIMIT, "task data", follow=True)  # a hub cache links its files
    except IrregularFileError as e:
        raise TaskDataError(str(e)) from None


def _json_rows(path: Path, blob: bytes) -> list[tuple[str, dict[str, Any]]]:
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TaskDataError(f"{path}: byte {e.start}: not UTF-8 text ({e.reason})") from None
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line, object_pairs_hook=unique_keys, parse_constant=_no_constant)
        except RecursionError:
            raise TaskDataError(f"{path}:{n}: nested deeper than Python parses") from None
        except ValueError as e:
            raise TaskDataError(f"{path}:{n}: not a JSON row ({e})") from None
        if not isinstance(row, dict):
            raise TaskDataError(f"{path}:{n}: a row is a JSON object, not {type(row).__name__}")
        out.append((f":{n}", row))
    return out


def _arrow_rows(path: Path, blob: bytes) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    import pyarrow as pa

    try:
        table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
        rows = table.to_pylist()
    except (pa.ArrowException, UnicodeDecodeError, ValueError) as e:
        raise TaskDataError(f"{path}: not an Arrow stream of rows ({e})") from None
    return table, [(f": row {i}", row) for i, row in enumerate(rows)]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def in_memory_dataset(rows: TaskRows, split: str = "test") -> Any:
    """A datasets DatasetDict holding exactly `rows` under `split`, built in memory (nothing cached on disk)."""
    import datasets

    if rows.table is not None:
        from datasets.table import InMemoryTable

        dataset = datasets.Dataset(InMemoryTable(rows.table))
    else:
        dataset = datasets.Dataset.from_list(list(rows.rows))
    return datasets.DatasetDict({split: dataset})
