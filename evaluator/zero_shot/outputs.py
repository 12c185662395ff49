"""A checkpoint's result directory (results.json, summary.txt, eval.log) and the table of several.

The table is plain text with columns sized to their contents, never to the terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluator.results import write_results
from recorder.output import write_output

SCHEMA = "recorder.zero-shot/1"


def table(docs: list[dict[str, Any]]) -> str:
    """One row per result (checkpoint, step, each task's score, the holdout loss), tasks in first-seen order."""
    tasks = list(dict.fromkeys(t for d in docs for t in d.get("scores", {})))
    head = ["checkpoint", "step", *tasks, "average", "holdout"]
    rows = [head] + [_row(d, tasks) for d in docs]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _row(doc: dict[str, Any], tasks: list[str]) -> list[str]:
    scores = doc.get("scores", {})
    values = [scores[t] for t in tasks if t in scores]
    avg = f"{sum(values) / len(values):.4f}" if values else "-"
    check = doc.get("holdout") or {}
    loss = check.get("recomputed")
    return [
        str(doc.get("label", doc.get("checkpoint", {}).get("path", "?"))),
        str(doc.get("checkpoint", {}).get("step", "-")),
        *(f"{scores[t]:.4f}" if t in scores else "-" for t in tasks),
        avg,
        f"{loss:.4f}" if isinstance(loss, float) else "-",
    ]


def write_outputs(directory: Path, doc: dict[str, Any], summary: str, log: str) -> Path:
    """results.json, summary.txt and eval.log in `directory` (made here, under -o DIR when given: each file
    written as recorder.output writes a user's path); returns results.json's path."""
    directory.mkdir(parents=True, exist_ok=False)
    path = directory / "results.json"
    write_results(path, doc)
    write_output(directory / "summary.txt", summary)
    write_output(directory / "eval.log", log)
    return path


def newest_results(base: Path) -> list[Path]:
    """results.json of the newest zero_shot result under `base` per checkpoint (newest by its finish time)."""
    newest: dict[str, tuple[str, Path]] = {}
    for path in sorted(base.rglob("results.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if doc.get("schema") != SCHEMA:
            continue
        key = str(doc.get("label"))
        stamp = str(doc.get("finished", ""))
        if key not in newest or stamp >= newest[key][0]:
            newest[key] = (stamp, path)
    return [p for _, p in sorted(newest.values(), key=lambda sp: str(sp[1]))]
