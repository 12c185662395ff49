"""Task specs: the shipped addition spec is the built-in task exactly; bad specs name the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer.policy import task
from trainer.policy.taskspec import TaskSpecError, load_spec, shipped
from trainer.policy.tokenizer import CharTokenizer


def test_shipped_addition_spec_is_the_built_in_task() -> None:
    from trainer.config import EvalSettings

    spec = load_spec(shipped("addition"))
    assert [(i.prompt, i.answer) for i in spec.items] == [(t.prompt, t.answer) for t in task.validation_tasks()]
    assert spec.fingerprint_texts() == task.holdout_texts()
    defaults = EvalSettings()
    assert (spec.samples, spec.k, spec.temperature, spec.top_p, spec.max_new_tokens, spec.target) == (
        defaults.samples,
        defaults.k,
        defaults.temperature,
        defaults.top_p,
        defaults.max_new_tokens,
        defaults.target,
    )
    first = spec.items[0]
    assert spec.render(first, CharTokenizer()) == first.prompt
    for completion in (first.answer, f" {first.answer} ", "0", first.answer + "0", ""):
        assert spec.reward(first, completion) == task.reward(task.Task(first.prompt, first.answer), completion)


def _write(tmp_path: Path, toml: str, data: str = '{"id": 1, "prompt": "2+2=", "answer": 4}\n') -> Path:
    (tmp_path / "d.jsonl").write_text(data)
    spec = tmp_path / "t.toml"
    spec.write_text(toml)
    return spec


GOOD = """data = "d.jsonl"
prompt = "Q: {prompt}\\nA:"
k = 2
temperature = 0.5
top_p = 1.0
max_new_tokens = 8
target = 0.69
[verifier]
kind = "numeric"
tolerance = 0.5
"""


def test_a_spec_with_template_and_numeric_verifier(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path, GOOD))
    (item,) = spec.items
    assert (item.id, item.answer, spec.samples, spec.name) == ("1", "4", 1, "t")
    assert spec.render(item, CharTokenizer()) == "Q: 2+2=\nA:"
    assert spec.reward(item, "it is 4.4") == 1.0 and spec.reward(item, "it is 5") == 0.0
    assert spec.fingerprint_texts() is None
    assert spec.describe()["verifier_version"] == "numeric/1"


def test_every_spec_problem_is_reported_at_once(tmp_path: Path) -> None:
    bad = 'data = "missing.jsonl"\nprompt = "no field"\nk = 0\ntop_p = 2.0\nsurprise = 1\n[verifier]\nkind = "fuzzy"\n'
    with pytest.raises(TaskSpecError) as e:
        load_spec(_write(tmp_path, bad))
    text = str(e.value)
    for part in (
        "t.toml",
        "unknown key 'surprise'",
        "missing.jsonl",
        "{prompt}",
        "k = 0",
        "top_p = 2.0",
        "temperature: missing",
        "'fuzzy'",
    ):
        assert part in text, part


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"id": 1, "prompt": "a", "answer": 1}\nnot json\n', "d.jsonl line 2: not JSON"),
        ('{"id": 1, "prompt": "a"}\n', "d.jsonl line 1: expected an object with id, prompt and answer"),
        ('{"id": 1, "prompt": "a", "answer": 1}\n{"id": 1, "prompt": "b", "answer": 2}\n', "line 2: id '1' repeats"),
        ("\n", "d.jsonl: no tasks"),
    ],
)
def test_bad_data_names_the_line(tmp_path: Path, data: str, message: str) -> None:
    with pytest.raises(TaskSpecError, match=message):
        load_spec(_write(tmp_path, GOOD, data))


def test_samples_cannot_exceed_the_data(tmp_path: Path) -> None:
    with pytest.raises(TaskSpecError, match="samples = 3, but d.jsonl holds 1 tasks"):
        load_spec(_write(tmp_path, "samples = 3\n" + GOOD))


def test_chat_needs_a_chat_template(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path, "chat = true\n" + GOOD))
    with pytest.raises(TaskSpecError, match="no chat template"):
        spec.render(spec.items[0], CharTokenizer())


def test_unknown_shipped_name_lists_the_shipped_ones() -> None:
    with pytest.raises(TaskSpecError, match="shipped: addition"):
        shipped("nope")
