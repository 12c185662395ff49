"""Old run_opened payloads read in today's shape (recorder.upcast, applied as a payload is read), never rewritten."""

from __future__ import annotations

import copy
from typing import Any

from recorder.kinds import RunOpened
from recorder.rules import recorded_target
from recorder.upcast import UPCASTS, upcast

REST = {"ruleset": None, "division": None, "provenance": {}, "resumed_from": None}
OLD = {  # a run_opened of `recorder train` from before `target` and `eval.task`: both only in its config
    "benchmark": "qwen35_397b_grpo",
    "global_batch_size": 256,
    "config": {"task": "/specs/plus-one.toml", "eval": {"target": 0.5, "k": 4, "samples": 251}},
}


def test_an_old_run_opened_gets_its_target_and_eval_task_from_its_config() -> None:
    before = copy.deepcopy(OLD)
    got = upcast("run_opened", OLD)
    assert got["target"] == 0.5 and recorded_target(RunOpened.from_recorded(OLD | REST)) == 0.5
    assert got["config"]["eval"] == {"target": 0.5, "k": 4, "samples": 251, "task": "/specs/plus-one.toml"}
    assert OLD == before  # the event's own data is left as it was read (its digest covers those bytes)


def test_what_a_writer_recorded_is_never_replaced() -> None:
    new: dict[str, Any] = REST | {
        "benchmark": None,
        "global_batch_size": None,
        "target": 0.69,
        "config": {"task": "addition", "eval": {"target": 0.5, "task": None, "task_sha256": "ab" * 32}},
    }
    assert upcast("run_opened", new) == new
    assert recorded_target(RunOpened.from_recorded(new)) == 0.69


def test_runs_that_recorded_nothing_stay_without() -> None:
    imported = REST | {"benchmark": "llama31_8b", "global_batch_size": None, "config": {}}
    assert upcast("run_opened", imported) == imported
    assert recorded_target(RunOpened.from_recorded(imported)) is None
    assert upcast("run_opened", None) == {} and recorded_target(None) is None
    assert upcast("weight_update", OLD) == OLD  # another kind: no step of run_opened's applies


def test_every_step_is_keyed_by_kind_and_version() -> None:
    assert all(isinstance(kind, str) and version >= 1 and steps for (kind, version), steps in UPCASTS.items())
