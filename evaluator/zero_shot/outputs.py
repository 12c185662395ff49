"""A checkpoint's result directory (results.json, summary.txt, eval.log) and the table of several.

The table is plain text with columns sized to their contents; on a terminal its score columns come in
blocks that fit its width, each block led by the checkpoint's name, which is never cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluator.results import write_results
from recorder.output import write_output

SCHEMA = "recorder.zero-shot/1"
GAP = 2  # spaces between two columns


def table(docs: list[dict[str, Any]], width: int | None = None) -> str:
    """One row per result (checkpoint, step, each task's score, the average, the holdout loss), tasks in
    first-seen order. `width` None: every column in one block (files, pipes). Otherwise the score columns are
    split into blocks that fit `width`, each led by the checkpoint and step; where not even one score column
    fits beside them, each row is a block of `name: value` lines. A checkpoint's name is never cut."""
    tasks = list(dict.fromkeys(t for d in docs for t in d.get("scores", {})))
    head = ["checkpoint", "step", *tasks, "average", "holdout"]
    rows = [head] + [_row(d, tasks) for d in docs]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    blocks = _blocks(widths, width)
    if blocks is None:
        return _records(rows)
    return "\n\n".join(_lines(rows, widths, [0, 1, *block]) for block in blocks) + "\n"


def _blocks(widths: list[int], width: int | None) -> list[list[int]] | None:
    """The score columns' indices, grouped so that each group fits `width` after checkpoint and step; None
    when not even one fits."""
    rest = list(range(2, len(widths)))
    if width is None:
        return [rest]
    lead = widths[0] + GAP + widths[1]
    blocks: list[list[int]] = []
    for i in rest:
        if lead + GAP + widths[i] > width:
            return None
        if blocks and lead + sum(GAP + widths[j] for j in [*blocks[-1], i]) <= width:
            blocks[-1].append(i)
        else:
            blocks.append([i])
    return blocks


def _lines(rows: list[list[str]], widths: list[int], columns: list[int]) -> str:
    lines = (
        (" " * GAP).join(r[i].ljust(widths[i]) if i == 0 else r[i].rjust(widths[i]) for i in columns) for r in rows
    )
    return "\n".join(line.rstrip() for line in lines)


def _records(rows: list[list[str]]) -> str:
    """Each result as its checkpoint's name on a line of its own, then `name: value` per column."""
    head, out = rows[0], []
    for r in rows[1:]:
        out.append(r[0])
        out.extend(f"  {name}: {value}" for name, value in zip(head[1:], r[1:], strict=True))
    return "\n".join(out) + "\n"


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
