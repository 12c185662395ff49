"""Old run_opened payloads read in today's shape (the payload class's `upcast_v1_*` steps, applied by
recorder.store.upcast as a payload is read), never rewritten."""

from __future__ import annotations

import copy
from typing import Any

from recorder.rules import recorded_target
from recorder.store.kinds import PAYLOADS, RunOpened, WeightUpdate
from recorder.store.upcast import upcast, upcast_steps

REST = {"ruleset": None, "division": None, "provenance": {}, "resumed_from": None}
OLD = {  # a run_opened of `recorder train` from before `target` and `eval.task`: both only in its config
    "benchmark": "qwen35_397b_grpo",
    "global_batch_size": 256,
    "config": {"task": "/specs/plus-one.toml", "eval": {"target": 0.5, "k": 4, "samples": 251}},
}


def test_an_old_run_opened_gets_its_target_and_eval_task_from_its_config() -> None:
    before = copy.deepcopy(OLD)
    got = upcast(RunOpened, OLD)
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
    assert upcast(RunOpened, new) == new
    assert recorded_target(RunOpened.from_recorded(new)) == 0.69


def test_runs_that_recorded_nothing_stay_without() -> None:
    imported = REST | {"benchmark": "llama31_8b", "global_batch_size": None, "config": {}}
    assert upcast(RunOpened, imported) == imported
    assert recorded_target(RunOpened.from_recorded(imported)) is None
    assert upcast(RunOpened, None) == {} and recorded_target(None) is None
    assert upcast(WeightUpdate, OLD) == OLD  # another kind: no step of run_opened's applies


def test_a_kinds_steps_are_its_payload_classs_own_by_version() -> None:
    assert upcast_steps(RunOpened) == [(1, RunOpened.upcast_v1_target), (1, RunOpened.upcast_v1_eval_task)]
    assert all(version >= 1 for cls in PAYLOADS.values() for version, _ in upcast_steps(cls))

    class Later(RunOpened):  # a step of a later schema version runs after the class's version-1 steps
        @staticmethod
        def upcast_v2_renamed(data: dict[str, Any]) -> dict[str, Any]:
            return data | {"renamed": data.get("target")}

    assert [v for v, _ in upcast_steps(Later)] == [1, 1, 2]
    assert upcast(Later, OLD)["renamed"] == 0.5  # v1 filled target first
    assert "renamed" not in upcast(Later, OLD, version=3)  # a segment already past every step
