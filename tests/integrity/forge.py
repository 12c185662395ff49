"""What a motivated party can do without a key: rewrite a segment's events and recompute its digest chain.

The forgeries are byte-perfect (the writer's own encoding), so only the semantic checks can catch them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recorder.store import canonical
from recorder.store.events import COLUMNS, GENESIS_DIGEST, arrow_schema, canonical_bytes, chain_digest
from recorder.store.reader import read_segment
from recorder.store.segment import END_OF_STREAM, row_encoder, schema_message

Row = dict[str, Any]


def trainer_segment(run: Path) -> Path:
    """The default run's one trainer segment."""
    return run / "events" / "trainer-0001.arrows"


def evaluator_segment(run: Path) -> Path:
    """The first evaluator segment of a run."""
    return run / "events" / "evaluator-0001.arrows"


def first_event(events: list[Row], kind: str, step: int | None = None) -> Row:
    """The first event of `kind` (at `step`, when given)."""
    return next(e for e in events if e["kind"] == kind and (step is None or e["step"] == step))


def rows(segment: Path) -> list[Row]:
    """The segment's events as dicts of their columns, `data` and `value` parsed."""
    out = []
    for e in read_segment(segment).events():
        row = {c: getattr(e, c) for c in COLUMNS if c not in ("value", "data")}
        row.update(data=e.data, value=e.value)
        out.append(row)
    return out


def write(segment: Path, events: list[Row], *, run_id: str | None = None, writer: str | None = None) -> None:
    """Write `events` as a closed segment, renumbered and rechained (a segment_closed is added if missing;
    one that was there keeps its data, such as a signature, with its count of events corrected)."""
    closing = next((e["data"] for e in events if e["kind"] == "segment_closed"), {})
    events = [e for e in events if e["kind"] != "segment_closed"]
    events.append(
        {
            **events[-1],
            "kind": "segment_closed",
            "step": None,
            "samples_count": None,
            "key": None,
            "value": None,
            "data": {**closing, "events": len(events)},
        }
    )
    segment.write_bytes(_encoded(events, run_id, writer) + END_OF_STREAM)


def write_open(segment: Path, events: list[Row]) -> None:
    """Write `events` as a segment whose writer did not close, renumbered and rechained."""
    segment.write_bytes(_encoded(events, None, None))


def _encoded(events: list[Row], run_id: str | None, writer: str | None) -> bytes:
    previous, body = GENESIS_DIGEST, [schema_message(arrow_schema())]
    for seq, e in enumerate(events):
        cols = (
            run_id or e["run_id"],
            writer or e["writer"],
            seq,
            e["time_ns"],
            e["mono_ns"],
            e["kind"],
            e["step"],
            e["samples_count"],
            e["key"],
            None if e["value"] is None else canonical.dumps(e["value"]),
            canonical.dumps(e["data"]),
        )
        previous = chain_digest(previous, canonical_bytes(*cols))
        body.append(row_encoder().encode((*cols, previous.hex())))
    return b"".join(body)


def rewrite(segment: Path, edit: Callable[[list[Row]], list[Row]]) -> None:
    """Apply `edit` to a segment's events and write them back, rechained."""
    write(segment, edit(rows(segment)))


def copy_run(source: Path, where: Path, *, evaluations: bool = True) -> Path:
    """A copy of a run (symlinks kept, as `cp -a`), optionally without its evaluations."""
    run = where / source.name
    ignore = None if evaluations else shutil.ignore_patterns("evaluator-*", "evals", "scores.jsonl", "result_*")
    shutil.copytree(source, run, symlinks=True, ignore=ignore)
    return run


def event(kind: str, time_ns: int, template: Row, **fields: Any) -> Row:
    """A new event like `template` (run id, writer, mono_ns) with this kind, time and fields."""
    return {
        **template,
        "kind": kind,
        "time_ns": time_ns,
        "step": None,
        "samples_count": None,
        "key": None,
        "value": None,
        "data": {},
        **fields,
    }


def edit_json(path: Path, **changes: Any) -> None:
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def in_trainer(edit: Callable[[list[Row]], object]) -> Callable[[Path], None]:
    """An attack that edits the run's trainer segment in place (`edit` may change the list or return one)."""

    def attack(run: Path) -> None:
        rewrite(trainer_segment(run), lambda events: edit(events) or events)  # type: ignore[func-returns-value]

    attack.__qualname__ = getattr(edit, "__name__", "attack")
    return attack


def in_evaluator(edit: Callable[[list[Row]], object]) -> Callable[[Path], None]:
    """An attack that edits the run's first evaluator segment in place."""

    def attack(run: Path) -> None:
        rewrite(evaluator_segment(run), lambda events: edit(events) or events)  # type: ignore[func-returns-value]

    attack.__qualname__ = getattr(edit, "__name__", "attack")
    return attack
