"""Old run_opened payloads read in today's shape (recorder.upcast), never rewritten."""

from __future__ import annotations

import copy
from typing import Any

from recorder.rules import recorded_target
from recorder.upcast import UPCASTS, upcast_data

OLD = {  # a run_opened of `recorder train` from before `target` and `eval.task`: both only in its config
    "benchmark": "qwen35_397b_grpo",
    "global_batch_size": 256,
    "config": {"task": "/specs/plus-one.toml", "eval": {"target": 0.5, "k": 4, "samples": 251}},
}


def test_an_old_run_opened_gets_its_target_and_eval_task_from_its_config() -> None:
    before = copy.deepcopy(OLD)
    got = upcast_data("run_opened", OLD)
    assert got["target"] == 0.5 and recorded_target(OLD) == 0.5
    assert got["config"]["eval"] == {"target": 0.5, "k": 4, "samples": 251, "task": "/specs/plus-one.toml"}
    assert OLD == before  # the event's own data is left as it was read (its digest covers those bytes)


def test_what_a_writer_recorded_is_never_replaced() -> None:
    new: dict[str, Any] = {
        "target": 0.69,
        "config": {"task": "addition", "eval": {"target": 0.5, "task": None, "task_sha256": "ab" * 32}},
    }
    assert upcast_data("run_opened", new) == new
    assert recorded_target(new) == 0.69


def test_runs_that_recorded_nothing_stay_without() -> None:
    imported = {"benchmark": "llama31_8b", "config": {}}
    assert upcast_data("run_opened", imported) == imported and recorded_target(imported) is None
    assert upcast_data("run_opened", None) == {} and recorded_target(None) is None
    assert upcast_data("weight_update", OLD) == OLD  # another kind: no step of run_opened's applies


def test_every_step_is_keyed_by_kind_and_version() -> None:
    assert all(isinstance(kind, str) and version >= 1 and steps for (kind, version), steps in UPCASTS.items())
