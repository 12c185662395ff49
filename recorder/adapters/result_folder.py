"""A submission's result folder, `<submission>/results/<system>/<benchmark>/`, as mlperf-logging's result
summarizer reads it: every `result_*.txt`, the `scaling.json` the review may add (the summarizer multiplies
the olympic average by its `scaling_factor`), and the system description `<submission>/systems/<system>.json`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.adapters.mllog_import import MLLOG_LIMIT, ResultSet
from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded
from replay.errors import ImportFileError
from replay.mllog_format import parse_line

SCALING_FILE = "scaling.json"


@dataclass(frozen=True)
class ResultFolder:
    """The files of one result folder and what every run imported from it records."""

    files: tuple[Path, ...]
    result_set: ResultSet
    notes: tuple[str, ...]  # what the import does not cover (power results)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(read_bounded(path, JSON_LIMIT, "JSON").decode("utf-8"))
    except (IrregularFileError, ValueError, RecursionError) as e:  # ValueError: JSONDecodeError and UnicodeDecodeError
        raise ImportFileError(f"{path}: not readable JSON ({e}); fix or remove it before importing") from e


def scaling_factor(folder: Path) -> tuple[float, str | None]:
    """scaling.json's `scaling_factor` (the summarizer's `_get_scaling_factor`), else 1.0."""
    path = folder / SCALING_FILE
    if not path.is_file():
        return 1.0, None
    contents = _read_json(path)
    factor = contents.get("scaling_factor") if isinstance(contents, dict) else None
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
        raise ImportFileError(f"{path}: no positive number under 'scaling_factor' (found {factor!r})")
    return float(factor), str(path)


JSON_LIMIT = 16 * 1024 * 1024  # scaling.json and a system description are a few KB
_BENCHMARK_KEY = b'"submission_benchmark"'


def _stated_benchmark(path: Path) -> str | None:
    """The benchmark the first `submission_benchmark` line of a log states (a byte search, not a parse)."""
    try:
        raw = read_bounded(path, MLLOG_LIMIT, "mllog")
    except IrregularFileError:
        return None  # the import itself says why it cannot read the file
    at = raw.find(_BENCHMARK_KEY)
    if at < 0:
        return None
    start = max(raw.rfind(b"\n", 0, at), raw.rfind(b"\r", 0, at)) + 1
    ends = [e for e in (raw.find(b"\n", at), raw.find(b"\r", at)) if e >= 0]
    parsed = parse_line(raw[start : min(ends, default=len(raw))].decode("latin-1"))
    value = parsed.get("value") if parsed is not None and parsed.key == "submission_benchmark" else None
    return value if isinstance(value, str) else None


def _require_one_benchmark(folder: Path, files: tuple[Path, ...]) -> None:
    """A result folder holds the runs of one benchmark; the summarizer would score a mixed one as the folder's
    name, whatever each log states."""
    stated = {f.name: _stated_benchmark(f) for f in files}
    if len({b for b in stated.values() if b is not None}) > 1:
        listing = ", ".join(f"{name}: {b or '-'}" for name, b in stated.items())
        raise ImportFileError(
            f"{folder}: its result files state different benchmarks ({listing}); a result folder holds the runs "
            "of one benchmark: import the files one by one, or fix the folder"
        )


def read_result_folder(folder: Path) -> ResultFolder:
    """The result files of `folder` in name order, its scaling factor and its system description."""
    files = tuple(sorted(p for p in folder.glob("result_*.txt") if p.is_file()))
    if not files:
        compressed = sorted(p.name for p in folder.glob("result_*.gz"))
        if compressed:
            raise ImportFileError(
                f"{folder}: no result_*.txt, only compressed files ({', '.join(compressed[:3])}"
                f"{', ...' if len(compressed) > 3 else ''}): mlperf-logging's result summarizer reads result_*.txt "
                "only; `gunzip` them first"
            )
        raise ImportFileError(f"{folder}: no result_*.txt in this folder; give a result folder or mllog files")
    _require_one_benchmark(folder, files)
    factor, scaling_file = scaling_factor(folder)
    system = folder.resolve().parent.name
    system_file = folder.resolve().parent.parent.parent / "systems" / f"{system}.json"
    description = _read_json(system_file) if system_file.is_file() else None
    notes: list[str] = []
    if (folder / "power").is_dir():
        notes.append(f"{folder}/power: power results are out of scope; only the time-to-train score is imported")
    return ResultFolder(
        files,
        ResultSet(
            folder=str(folder),
            scaling_factor=factor,
            scaling_file=scaling_file,
            system=system,
            system_description=description if isinstance(description, dict) else None,
        ),
        tuple(notes),
    )
