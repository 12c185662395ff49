"""Whether each evaluated step's checkpoint still holds the bytes it was committed with, for `recorder evals`.

An evaluation names its step's commit; weights replaced after it would leave its row showing a score for
weights no longer on disk. `evals` rechecks each evaluated step's committed files by verify's own rules
(`commit-sha`, `commit-files`: sizes and sha256), whole checkpoints at a time while the bytes rechecked in one
command stay within `REHASH_BYTES`; the steps past it are named as not rechecked. `recorder verify` rechecks
every commit, always.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from recorder.store.events import Event
from recorder.store.kinds import CheckpointCommitted
from recorder.store.reader import run_id_from
from recorder.store.run import RunDir
from recorder.verify.facts.fact_checks import Commit, check_commit_files
from recorder.verify.findings import Findings, parsed

REHASH_BYTES = 8 * 1024**3  # about a minute of sha256 on one core: the most bytes one command rehashes
CHANGED_RULES = ("commit-sha", "commit-files", "commit-inside-run")


@dataclass(frozen=True)
class Rechecked:
    """What the recheck found: step -> why its checkpoint changed, and the steps it did not recheck."""

    changed: dict[int, str] = field(default_factory=dict)
    not_rechecked: list[int] = field(default_factory=list)


def recheck(run: RunDir, events: list[Event], steps: set[int], budget: int = REHASH_BYTES) -> Rechecked:
    """The first commit of each step in `steps`, its files compared with the commit (sizes and sha256)."""
    found, done = Findings(), Rechecked()
    run_id = run_id_from(events)
    seen: set[int] = set()
    for e in events:
        if e.kind != "checkpoint_committed" or e.step not in steps or e.step in seen:
            continue
        seen.add(e.step)
        d = parsed(CheckpointCommitted, e, found)
        if d is None:
            continue
        if d.bytes > budget:
            done.not_rechecked.append(e.step)
            continue
        budget -= max(d.bytes, 0)
        before = len(found.problems)
        check_commit_files(run, Commit(e, d), run_id, found)
        why = next((p.message for p in found.problems[before:] if p.rule in CHANGED_RULES), None)
        if why is not None:
            done.changed[e.step] = why
    return done
