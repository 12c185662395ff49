"""A checkpoint's result directory (results.json, summary.txt, eval.log) and the table of several.

The table is plain text with columns sized to their contents; on a terminal its score columns come in
blocks that fit its width, each block led by the checkpoint's name, which is never cut."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.harness.task_content import pins_from_environment
from evaluator.results_files import write_results
from evaluator.zero_shot.reporting.shown import (
    AUTHORSHIP,
    ShownResult,
    authorship,
    checkpoint_key,
    out_of_range,
    row_names,
    shown,
)
from evaluator.zero_shot.scored_bytes import Rehash, changed_since_scored
from recorder.checkpoints.manifest import Manifest
from recorder.output import write_output
from recorder.results.binding import bind, check
from recorder.results.document import ResultsDocError
from recorder.results.zero_shot import (
    ZERO_SHOT_SCHEMA,
    ZeroShotDocument,
    ZeroShotResults,
    scored_code,
    scored_manifest,
    zero_shot_from_json,
)
from recorder.signing import signer_from_environment
from recorder.untrusted.tree_walk import walk
from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded
from trainer.policy.errors import CheckpointError

RESULTS_LIMIT = 256 * 1024 * 1024  # larger than any result (its per-sample rows are in their own files)

GAP = 2  # spaces between two columns
TEXT = ("checkpoint", "note")  # the columns aligned left


def table(docs: Sequence[ZeroShotDocument], width: int | None = None, *, unchecked: bool = False) -> str:
    """One row per result (checkpoint, step, each task's score, the average, the holdout loss, and a note
    where there is one: a smoke test, test data, not the task), tasks in first-seen order; below it, one
    line per task whose data is not the task's, saying why (evaluator.zero_shot.reporting.shown). `width` None: every
    column in one block (files, pipes). Otherwise the score columns are split into blocks that fit `width`,
    each led by the checkpoint and step (a note too wide for that goes on a line of its own under the table);
    where not even one score column fits beside them, each row is a block of `name: value` lines. A
    checkpoint's name is never cut. `unchecked` (collect without trusted keys): each row's note says how far
    it is vouched for (unsigned, key not checked), and a line under the table says what that means."""
    pins = pins_from_environment()
    results = [shown(d, pins, unchecked=unchecked) for d in docs]
    tasks = list(dict.fromkeys(t for d in docs for t in d.scores))
    noted = any(r.note for r in results)
    head = ["checkpoint", "step", *tasks, "average", "holdout", *(["note"] if noted else [])]
    rows = [head] + [_row(r, name, tasks, noted) for r, name in zip(results, row_names(docs), strict=True)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    blocks = _blocks(widths, width)
    why = "".join(line + "\n" for r in results for line in r.not_task)
    if unchecked:
        why += "".join(AUTHORSHIP[word] + "\n" for word in dict.fromkeys(authorship(r.doc) for r in results))
    if blocks is None and noted and _blocks(widths[:-1], width) is not None:
        # a note too wide to sit beside a long name goes under the table, one line per noted result
        rows, widths, blocks = [r[:-1] for r in rows], widths[:-1], _blocks(widths[:-1], width)
        why = "".join(f"note: {r.doc.label} - {r.note}\n" for r in results if r.note) + why
    if blocks is None:
        return _records(rows) + why
    return "\n\n".join(_lines(rows, widths, [0, 1, *block]) for block in blocks) + "\n" + why


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
        (" " * GAP).join(r[i].ljust(widths[i]) if rows[0][i] in TEXT else r[i].rjust(widths[i]) for i in columns)
        for r in rows
    )
    return "\n".join(line.rstrip() for line in lines)


def _records(rows: list[list[str]]) -> str:
    """Each result as its checkpoint's name on a line of its own, then `name: value` per column."""
    head, out = rows[0], []
    for r in rows[1:]:
        out.append(r[0])
        out.extend(f"  {name}: {value}" for name, value in zip(head[1:], r[1:], strict=True))
    return "\n".join(out) + "\n"


def _row(result: ShownResult, name: str, tasks: list[str], noted: bool) -> list[str]:
    doc = result.doc
    loss = doc.holdout.get("recomputed")
    return [
        name,
        str(doc.checkpoint.step),
        *(result.cells.get(t, "-") for t in tasks),
        result.average,
        f"{loss:.4f}" if isinstance(loss, float) else "-",
        *([result.note] if noted else []),
    ]


def write_outputs(directory: Path, doc: ZeroShotDocument, summary: str, log: str) -> Path:
    """results.json (bound to what it scored, and signed with the key RECORDER_SIGNING_KEY names, if any:
    recorder.results.binding), summary.txt, eval.log and, with --log-samples, samples_<task>.jsonl in
    `directory` (made here, under -o DIR when given: each file written as recorder.output writes a user's
    path); returns results.json's path."""
    directory.mkdir(parents=True, exist_ok=False)
    path = directory / "results.json"
    write_results(path, bind(doc, scored_manifest(doc), scored_code(doc), signer_from_environment()))
    write_output(directory / "summary.txt", summary)
    write_output(directory / "eval.log", log)
    for task, rows in _samples(doc).items():  # --log-samples
        write_output(directory / f"samples_{task}.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return path


def _samples(doc: ZeroShotDocument) -> dict[str, list[Any]]:
    """Each task's per-sample rows, where they were logged."""
    tasks = getattr(doc, "tasks", None) or {}
    return {name: list(t["samples"]) for name, t in tasks.items() if isinstance(t, dict) and "samples" in t}


@dataclass(frozen=True)
class FoundResults:
    """The zero-shot results under a directory: those that verify (path, document, in their paths' order),
    and one line per results.json passed over, saying why."""

    shown: list[tuple[Path, ZeroShotDocument]]
    skipped: list[str]


def verified_results(
    base: Path, trusted: Mapping[str, str] | None = None, rehash: Rehash | None = None
) -> FoundResults:
    """Every zero-shot result under `base`, each checked against its binding (recorder.results.binding) and
    its checkpoint's shards (scored_bytes.py, within `rehash`'s budget): shown only when it verifies (under
    `trusted` keys, when given) and its checkpoint still holds the bytes it scored; a results.json of another
    kind (a harness session's) is not a zero-shot result and is not named."""
    rehash = rehash or Rehash()
    found = FoundResults([], [])
    for path in sorted(Path(e.path) for e in walk(base) if e.name == "results.json"):
        try:
            body = read_bounded(path, RESULTS_LIMIT, "results.json")
            doc = zero_shot_from_json(body)
        except IrregularFileError as e:
            found.skipped.append(f"skipped {path}: {str(e).split(': ', 1)[-1]}")
            continue
        except ResultsDocError as e:
            if _claims_zero_shot(body):
                found.skipped.append(f"skipped {path}: not a zero-shot result ({e})")
            continue
        except OSError as e:
            found.skipped.append(f"skipped {path}: cannot read it ({e.strerror})")
            continue
        why = check(doc, doc.binding, _scored(doc), scored_code(doc), trusted) or out_of_range(doc)
        why = why or changed_since_scored(doc, rehash, path)
        if why is None:
            found.shown.append((path, doc))
        else:
            found.skipped.append(f"skipped {path}: {why}")
    return found


def _claims_zero_shot(body: bytes) -> bool:
    return ZERO_SHOT_SCHEMA.encode() in body


def _scored(doc: ZeroShotDocument) -> str:
    """The manifest hash the document records, its root recomputed from its shards (a root edited to match
    another checkpoint's no longer agrees with the shard list)."""
    if isinstance(doc, ZeroShotResults):
        try:
            return Manifest.from_dict(dict(doc.checkpoint.manifest)).root
        except CheckpointError:
            return ""
    return scored_manifest(doc)


def newest_results(base: Path) -> list[ZeroShotDocument]:
    """The newest verified zero-shot result under `base` per checkpoint (newest by its finish time), in the
    order of their files' paths."""
    newest: dict[tuple[str, str], tuple[str, Path, ZeroShotDocument]] = {}
    for path, doc in verified_results(base).shown:
        key = checkpoint_key(doc)
        if key not in newest or doc.finished >= newest[key][0]:
            newest[key] = (doc.finished, path, doc)
    return [doc for _, _, doc in sorted(newest.values(), key=lambda found: str(found[1]))]
