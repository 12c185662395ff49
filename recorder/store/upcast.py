"""Old events in today's shape: where older writers recorded a fact otherwise (under another key, in another
place), every reader of that payload gets it in today's shape from here, never from a branch of its own.

What an older writer did not record at all, no upcast can fill: the field stays absent, and a reader that needs
it branches on "recorded before the field" where it reads it, the absence being the fact. Those readers:
`recorder.checkpoints.formats` (a commit with no `format` is the trainer's single safetensors file),
`recorder.verify.facts.eval_settings` and `evaluator.run_facts` (no `task_sha256`: nothing to compare the task spec
with), `evaluator.evaluate` (a commit with no shard manifest, an older import: its tree is hashed before
loading). tests/layout/test_upcast_readers.py holds this list to the code.

Events on disk are never rewritten: their bytes, digests and signatures stay as written, and verify's byte
checks read them raw. An upcast is a pure function of one event's `data` that gives the mapping readers of
facts use; it never changes a value a writer did record. Steps are keyed by kind and by the version of the
segment schema they upgrade from (`schemas/event_v<N>.toml`), and applied in order. Each step is a static
method of the payload class it upgrades, named `upcast_v<N>_<what it fills>` (as eventsourcing puts
`upcast_v1_v2` on the event class: `recorder.store.kinds.RunOpened.upcast_v1_target`), so a kind's fields, keys and
upcasts are read in one place; this module only finds and applies them. Within version 1, payload keys were
added as the recorder grew; the `v1` steps fill each from what writers recorded before it. A new schema version
adds its own steps after them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Step = Callable[[dict[str, Any]], dict[str, Any]]
_STEP = re.compile(r"upcast_v(\d+)_\w+")


def upcast_steps(payload: type) -> list[tuple[int, Step]]:
    """(schema version, step) of each `upcast_v<N>_...` static method of a payload class (its bases' first),
    by version, in the order the class defines them within one version."""
    found: list[tuple[int, Step]] = []
    for klass in reversed(payload.__mro__):
        for name, member in vars(klass).items():
            match = _STEP.fullmatch(name)
            if match and isinstance(member, staticmethod):
                found.append((int(match.group(1)), member.__func__))
    return sorted(found, key=lambda step: step[0])  # stable: a version's steps keep the class's order


def upcast(payload: type, data: Mapping[str, Any] | None, version: int = 1) -> dict[str, Any]:
    """`data` of an event of `payload`'s kind from a segment of schema `version`, in today's shape (a new
    mapping; `data` itself is left as it is). None (no event) gives {}."""
    out = dict(data or {})
    for step_version, step in upcast_steps(payload):
        if step_version >= version:
            out = step(out)
    return out
