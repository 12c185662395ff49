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

from recorder.adapters.mllog_import import ResultSet
from replay.errors import ImportFileError

SCALING_FILE = "scaling.json"


@dataclass(frozen=True)
class ResultFolder:
    """The files of one result folder and what every run imported from it records."""

    files: tuple[Path, ...]
    result_set: ResultSet
    notes: tuple[str, ...]  # what the import does not cover (power results)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
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


def read_result_folder(folder: Path) -> ResultFolder:
    """The result files of `folder` in name order, its scaling factor and its system description."""
    files = tuple(sorted(p for p in folder.glob("result_*.txt") if p.is_file()))
    if not files:
        raise ImportFileError(f"{folder}: no result_*.txt in this folder; give a result folder or mllog files")
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
