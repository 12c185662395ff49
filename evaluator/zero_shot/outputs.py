"""A checkpoint's result directory (results.json, summary.txt, eval.log) and the table of several.

The table is plain text with columns sized to their contents; on a terminal its score columns come in
blocks that fit its width, each block led by the checkpoint's name, which is never cut."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluator.results_files import write_results
from recorder.output import write_output
from recorder.results.document import ResultsDocError
from recorder.results.zero_shot import ZeroShotDocument, zero_shot_from_json

GAP = 2  # spaces between two columns


def table(docs: Sequence[ZeroShotDocument], width: int | None = None) -> str:
    """One row per result (checkpoint, step, each task's score, the average, the holdout loss), tasks in
    first-seen order. `width` None: every column in one block (files, pipes). Otherwise the score columns are
    split into blocks that fit `width`, each led by the checkpoint and step; where not even one score column
    fits beside them, each row is a block of `name: value` lines. A checkpoint's name is never cut."""
    tasks = list(dict.fromkeys(t for d in docs for t in d.scores))
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


def _row(doc: ZeroShotDocument, tasks: list[str]) -> list[str]:
    scores = doc.scores
    values = [scores[t] for t in tasks if t in scores]
    avg = f"{sum(values) / len(values):.4f}" if values else "-"
    loss = doc.holdout.get("recomputed")
    return [
        doc.label,
        str(doc.checkpoint.step),
        *(f"{scores[t]:.4f}" if t in scores else "-" for t in tasks),
        avg,
        f"{loss:.4f}" if isinstance(loss, float) else "-",
    ]


def write_outputs(directory: Path, doc: ZeroShotDocument, summary: str, log: str) -> Path:
    """results.json, summary.txt, eval.log and, with --log-samples, samples_<task>.jsonl in `directory` (made
    here, under -o DIR when given: each file written as recorder.output writes a user's path); returns
    results.json's path."""
    directory.mkdir(parents=True, exist_ok=False)
    path = directory / "results.json"
    write_results(path, doc)
    write_output(directory / "summary.txt", summary)
    write_output(directory / "eval.log", log)
    for task, rows in _samples(doc).items():  # --log-samples
        write_output(directory / f"samples_{task}.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return path


def _samples(doc: ZeroShotDocument) -> dict[str, list[Any]]:
    """Each task's per-sample rows, where they were logged."""
    tasks = getattr(doc, "tasks", None) or {}
    return {name: list(t["samples"]) for name, t in tasks.items() if isinstance(t, dict) and "samples" in t}


def newest_results(base: Path) -> list[ZeroShotDocument]:
    """The newest zero-shot result under `base` per checkpoint (newest by its finish time), in the order of
    their files' paths; a results.json of another kind, or unreadable, is passed over."""
    newest: dict[str, tuple[str, Path, ZeroShotDocument]] = {}
    for path in sorted(base.rglob("results.json")):
        try:
            doc = zero_shot_from_json(path.read_bytes())
        except (OSError, ResultsDocError):
            continue
        if doc.label not in newest or doc.finished >= newest[doc.label][0]:
            newest[doc.label] = (doc.finished, path, doc)
    return [doc for _, _, doc in sorted(newest.values(), key=lambda found: str(found[1]))]
