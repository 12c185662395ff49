"""The rules about who recorded a fact: each kind comes only from the writers its catalogue entry names.

- kind-writer: an event's writer is one that `schemas/catalogue.toml` lets record its kind (`writers`): a
  `weight_update` in an evaluator segment, or anything but `rank_step` in a rank's segment `trainer-rank<R>`,
  is a fact no writer of ours records.
- run-writer: timing facts (`run_writer = true` in the catalogue: run_start, weight_update,
  checkpoint_committed, train_stop) come only from the run's own writer, the writer of its first run_opened
  (an imported run: its importers): a second writer's clock cannot stand in for the trainer's.
- imported-from: `provenance.imported_from` (which switches the evidence rules to the original log's) is
  the importer's fact: a run_opened that states it comes from the mllog importer's writer, never a trainer's.

The segment file's name is its writer's (rule segment-name), so the writer is the segment's. Every reader
of facts (replay's timeline, eval, the history) drops what kind-writer refuses, through `may_write`.
"""

from __future__ import annotations

from recorder.store.catalogue import may_write, records_timing_of, run_writer_kinds, writers_of
from recorder.store.events import Event
from recorder.store.kinds import RunOpened
from recorder.verify.findings import Findings, parsed

IMPORT_WRITER = "import"  # recorder/adapters/mllog_import.py WRITER


def run_writer(events: list[Event]) -> str | None:
    """The writer of the run's first run_opened (in (segment, seq) order, as verify sorts), if any."""
    return next((e.writer for e in events if e.kind == "run_opened"), None)


def check_writers(events: list[Event], found: Findings) -> None:
    """Rules kind-writer and run-writer, over every event verify kept."""
    owner = run_writer(events)
    timing = run_writer_kinds()
    for e in events:
        if not may_write(e.writer, e.kind):
            names = ", ".join(writers_of(e.kind))
            found.fail(e, "kind-writer", f"{e.kind} from writer {e.writer!r}: only {names} record it")
        elif owner is not None and e.kind in timing and not records_timing_of(e.writer, owner):
            found.fail(
                e, "run-writer", f"{e.kind} from writer {e.writer!r}: the run's timing facts are its writer {owner!r}'s"
            )


def imported(events: list[Event], found: Findings) -> bool:
    """Whether the run is an mllog import (its first run_opened, by the importer, names the log); rule
    imported-from fails a run_opened of another writer that states one."""
    is_import = False
    for e in events:
        if e.kind != "run_opened" or (opened := parsed(RunOpened, e, found)) is None:
            continue
        if opened.provenance.get("imported_from"):
            if e.writer != IMPORT_WRITER:
                found.fail(
                    e,
                    "imported-from",
                    f"run_opened of writer {e.writer!r} says imported_from: only the importer "
                    f"({IMPORT_WRITER!r}) records where a run was imported from",
                )
            elif e is next(x for x in events if x.kind == "run_opened"):
                is_import = True
    return is_import
