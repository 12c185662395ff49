"""Each benchmark's goal comes from mlperf-logging's own ruleset files: its target and its direction."""

from __future__ import annotations

import pytest

from recorder.goals import Goal, all_goals, benchmark_goal, opened_goal, parse_goal
from recorder.store.kinds import RunOpened


def test_a_loss_passes_at_or_below_its_target() -> None:
    goal = benchmark_goal("llama2_70b_lora", "5.1.0")
    assert goal == Goal(0.925, "<=") and goal.lower_is_better
    assert goal.passes(0.9222) and goal.passes(0.925) and not goal.passes(0.9434)
    assert goal.best([0.9434, 0.9222, 0.93]) == 0.9222


def test_the_grpo_benchmark_passes_strictly_above_its_target_accuracy() -> None:
    goal = benchmark_goal("qwen35_397b_grpo", "6.1.0")
    assert goal == Goal(0.69, ">")
    assert not goal.passes(0.69) and goal.passes(0.6901)


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        ("(v['value'] <= 0.925) and v['value'] > 0.0", Goal(0.925, "<=")),
        ("(v['value'] <= 2.69) and v['value'] > 2.6", Goal(2.69, "<=")),  # a floor above 0 is still a floor
        ("v['value'] >= 0.720 and v['value'] < 1.0", Goal(0.72, ">=")),
        (" v['value'] >= 0.908", Goal(0.908, ">=")),
        ("v['value'] > s['target_accuracy']", Goal(0.69, ">")),
        ("(0.0 <= v['value']['FID'] <= 90.0) and (0.15 <= v['value']['CLIP'] <= 1.0)", None),  # two metrics
        ("(v['value'] >= 0.712 if s['global_batch_size'] < 8192 else v['value'] >= 0.706)", None),
    ],
)
def test_conditions_of_the_checkers_files(check: str, expected: Goal | None) -> None:
    assert parse_goal(check, 0.69) == expected


def test_every_installed_benchmark_with_one_metric_has_a_goal() -> None:
    goals = all_goals()
    assert {"llama2_70b_lora", "qwen35_397b_grpo", "gpt_oss_20b", "resnet"} <= set(goals)
    assert goals["gpt_oss_20b"].lower_is_better and not goals["resnet"].lower_is_better


def test_a_trained_run_is_judged_by_its_recorded_target_an_import_by_its_benchmark() -> None:
    def opened(**data: object) -> RunOpened:
        base = {"ruleset": None, "division": None, "global_batch_size": None, "config": {}, "provenance": {}}
        return RunOpened.from_recorded(base | {"resumed_from": None} | data)

    assert opened_goal(opened(benchmark="qwen35_397b_grpo", target=0.5)) == Goal(0.5, ">")
    assert opened_goal(opened(benchmark="llama2_70b_lora", ruleset="5.1.0")) == Goal(0.925, "<=")
    assert opened_goal(opened(benchmark="no_such_benchmark")) is None  # never 0.69 for an import
