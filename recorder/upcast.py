"""Old events in today's shape: where older writers recorded a fact otherwise (under another key, in another
place), every reader of that payload gets it in today's shape from here, never from a branch of its own.

What an older writer did not record at all, no upcast can fill: the field stays absent, and a reader that needs
it branches on "recorded before the field" where it reads it, the absence being the fact. Those readers:
`recorder.checkpoint_formats` (a commit with no `format` is the trainer's single safetensors file),
`recorder.verify.eval_settings` and `evaluator.run_facts` (no `task_sha256`: nothing to compare the task spec
with), `evaluator.evaluate` (a commit with no shard manifest, an older import: its tree is hashed before
loading). tests/layout/test_upcast_readers.py holds this list to the code.

Events on disk are never rewritten: their bytes, digests and signatures stay as written, and verify's byte
checks read them raw. An upcast is a pure function of one event's `data` that gives the mapping readers of
facts use; it never changes a value a writer did record. Steps are keyed by kind and by the version of the
segment schema they upgrade from (`schemas/event_v<N>.toml`; eventsourcing's Mapper, `upcast_vN_vN+1`),
and applied in order. Within version 1, payload keys were added as the recorder grew; the `v1` steps fill each
from what writers recorded before it. A new schema version adds its own steps after them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Step = Callable[[dict[str, Any]], dict[str, Any]]


def _eval_section(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    config = data.get("config")
    section = config.get("eval") if isinstance(config, Mapping) else None
    return section if isinstance(section, Mapping) else None


def upcast_run_opened_v1_target(data: dict[str, Any]) -> dict[str, Any]:
    """`target` (the pass target the run is evaluated against): runs recorded before it hold it only in the
    resolved config's `eval.target`."""
    section = _eval_section(data)
    if data.get("target") is None and section is not None and section.get("target") is not None:
        return data | {"target": section["target"]}
    return data


def upcast_run_opened_v1_eval_task(data: dict[str, Any]) -> dict[str, Any]:
    """`config.eval.task` (the task spec the evaluation scores): runs recorded before it name their spec in
    the config's top-level `task`."""
    section, config = _eval_section(data) or {}, data.get("config")
    if "task" in section or not isinstance(config, Mapping) or not isinstance(config.get("task"), str):
        return data
    return data | {"config": dict(config) | {"eval": dict(section) | {"task": config["task"]}}}


UPCASTS: dict[tuple[str, int], tuple[Step, ...]] = {
    ("run_opened", 1): (upcast_run_opened_v1_target, upcast_run_opened_v1_eval_task),
}


def upcast(kind: str, data: Mapping[str, Any] | None, version: int = 1) -> dict[str, Any]:
    """`data` of an event of `kind` from a segment of schema `version`, in today's shape (a new mapping;
    `data` itself is left as it is). None (no event) gives {}."""
    out = dict(data or {})
    for (step_kind, step_version), steps in sorted(UPCASTS.items()):
        if step_kind == kind and step_version >= version:
            for step in steps:
                out = step(out)
    return out
