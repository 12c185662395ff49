"""The shipped task set: names, data directory resolution, errors, and every task loading through lm-eval."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.harness.errors import MissingTaskDataError, UnknownTaskError
from evaluator.harness.taskset import (
    DATA_ALIASES,
    DEFAULT_TASKS,
    ENV,
    METRICS,
    SHIPPED_DATA,
    data_dir,
    lm_eval_config,
    parse_tasks,
    resolve_tasks,
)
from tests.kit import write_data

pytest.importorskip("lm_eval")


def test_parse_tasks_keeps_order_drops_repeats_and_names_unknown_ones() -> None:
    assert parse_tasks(" piqa,arc_easy , piqa") == ["piqa", "arc_easy"]
    with pytest.raises(UnknownTaskError, match="nope.*known: arc_easy"):
        parse_tasks("arc_easy,nope")
    with pytest.raises(UnknownTaskError, match="at least one"):
        parse_tasks(" , ")


def test_metrics_are_the_usual_zero_shot_ones() -> None:
    assert {t: METRICS[t] for t in DEFAULT_TASKS} == {
        "arc_easy": "acc_norm",
        "arc_challenge": "acc_norm",
        "hellaswag": "acc_norm",
        "openbookqa": "acc_norm",
        "piqa": "acc_norm",
        "winogrande": "acc",
        "siqa": "acc",
    }


def test_data_dir_from_option_then_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with pytest.raises(MissingTaskDataError, match=f"--data-dir DIR or set {ENV}"):
        data_dir(None)
    monkeypatch.setenv(ENV, str(tmp_path))
    assert data_dir(None) == tmp_path
    assert data_dir(SHIPPED_DATA) == SHIPPED_DATA
    with pytest.raises(MissingTaskDataError, match="does not exist"):
        data_dir(tmp_path / "absent")


def test_a_missing_dataset_names_the_task_and_where_to_put_it(tmp_path: Path) -> None:
    (tmp_path / "piqa.jsonl").write_text((SHIPPED_DATA / "piqa.jsonl").read_text())
    with pytest.raises(MissingTaskDataError) as e:
        resolve_tasks(["piqa", "siqa", "hellaswag"], tmp_path)
    assert f"siqa (put it at {tmp_path / 'siqa.jsonl'})" in str(e.value)
    assert "hellaswag" in str(e.value) and "piqa (" not in str(e.value)


def test_shipped_files_are_what_the_generator_writes() -> None:
    import json

    for name, rows in write_data.datasets().items():
        shipped = [json.loads(line) for line in (SHIPPED_DATA / f"{name}.jsonl").read_text().splitlines()]
        assert shipped == rows, name
        assert 24 <= len(rows) <= 60, name


@pytest.mark.parametrize("name", list(METRICS))
def test_each_task_loads_offline_through_lm_eval(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from lm_eval.api.task import ConfigurableTask

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    [task] = resolve_tasks([name], SHIPPED_DATA)
    t = ConfigurableTask(config=lm_eval_config(task))
    docs = list(t.test_docs())
    assert len(docs) == len(write_data.datasets()[DATA_ALIASES.get(name, name)])
    for doc in docs:
        choices = t.doc_to_choice(doc)
        target = t.doc_to_target(doc)
        assert len(choices) >= 2
        # Winogrande's target is the shared sentence tail and its text is the gold index: partial evaluation
        gold = t.doc_to_text(doc) if name == "winogrande" else target
        assert isinstance(gold, int) and 0 <= gold < len(choices), (name, doc)
