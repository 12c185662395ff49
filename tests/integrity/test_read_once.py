"""What is scored is what is hashed: each input a zero-shot result rests on is read once into memory, hashed,
and those bytes are what is used. The task rows lm-eval scores come from the bytes whose hashes results.json
records, never from the datasets library's cache (keyed by a file's path and modification time: a cache of
doctored rows, the honest file put back with the same mtime, used to be scored under the honest hashes); the
holdout loss is computed over the bytes its data_sha256 names; rows that are not plain (a key given twice, a
lone surrogate) are refused naming the file and line."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from evaluator.harness.errors import TaskDataError
from evaluator.harness.task_rows import read_rows
from evaluator.harness.taskset import SHIPPED_DATA, TASKS_DIR, TaskData, lm_eval_config
from evaluator.zero_shot.holdout_check.holdout import documents
from evaluator.zero_shot.origin.training_run import HoldoutPlan, holdout_bytes

HONEST = [json.loads(line) for line in (SHIPPED_DATA / "piqa.jsonl").read_text().splitlines() if line.strip()]


def _lines(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _task(data: Path) -> TaskData:
    return TaskData(name="piqa", metric="acc_norm", config=TASKS_DIR / "piqa.yaml", data=data)


def _scored(task: TaskData) -> list[dict[str, object]]:
    """The rows lm-eval is handed for the task, through the config lm-eval is given."""
    rows: list[dict[str, object]] = list(lm_eval_config(task)["custom_dataset"]()["test"])
    return rows


def test_a_poisoned_datasets_cache_with_the_same_mtime_is_not_what_is_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "piqa.jsonl"
    doctored = [r | {"sol2": r["sol1"]} if r["label"] == 0 else r | {"sol1": r["sol2"]} for r in HONEST]
    honest_text = _lines(HONEST)
    data.write_text(_lines(doctored))
    os.utime(data, (1_700_000_000, 1_700_000_000))
    datasets.load_dataset("json", data_files={"test": str(data)}, cache_dir=str(tmp_path / "cache"))
    data.write_text(honest_text)
    os.utime(data, (1_700_000_000, 1_700_000_000))  # the honest bytes back, with the cached file's mtime
    cached = datasets.load_dataset("json", data_files={"test": str(data)}, cache_dir=str(tmp_path / "cache"))
    assert list(cached["test"]) == doctored  # the attack is real: the library answers from its cache
    task = _task(data).read()
    assert _scored(task) == HONEST
    assert task.data_sha256 == hashlib.sha256(honest_text.encode()).hexdigest()
    assert task.content_sha256 == read_rows([SHIPPED_DATA / "piqa.jsonl"], "json").content_sha256


def test_the_rows_scored_are_the_bytes_read_even_when_the_file_changes_after(tmp_path: Path) -> None:
    data = tmp_path / "piqa.jsonl"
    data.write_text(_lines(HONEST))
    task = _task(data).read()
    data.write_text(_lines([r | {"label": 1 - int(str(r["label"]))} for r in HONEST]))
    assert _scored(task) == HONEST and task.data_sha256 == hashlib.sha256(_lines(HONEST).encode()).hexdigest()


def test_an_arrow_split_is_scored_from_its_bytes_as_read(tmp_path: Path) -> None:
    import pyarrow as pa

    table = pa.Table.from_pylist(HONEST)
    files = []
    for i, part in enumerate((table.slice(0, 3), table.slice(3))):
        files.append(tmp_path / f"piqa-validation-0000{i}-of-00002.arrow")
        with pa.OSFile(str(files[-1]), "wb") as sink, pa.ipc.new_stream(sink, part.schema) as writer:
            writer.write_table(part)
    task = TaskData(
        name="piqa", metric="acc_norm", config=TASKS_DIR / "piqa.yaml", data=tmp_path, builder="arrow",
        files=tuple(files),
    ).read()  # fmt: skip
    for f in files:
        f.write_bytes(b"")
    assert _scored(task) == HONEST
    assert task.content_sha256 == read_rows([SHIPPED_DATA / "piqa.jsonl"], "json").content_sha256


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"goal": "g", "label": 0, "label": 1, "sol1": "a", "sol2": "b"}', "key 'label' given twice"),
        ('{"goal": "\\ud800", "label": 0, "sol1": "a", "sol2": "b"}', "a lone surrogate (\\ud800)"),
        ('{"goal": "g", "label": NaN, "sol1": "a", "sol2": "b"}', "NaN is not a JSON number"),
        ('["goal", 0]', "a row is a JSON object, not list"),
    ],
)
def test_a_row_that_is_not_plain_is_refused_naming_file_and_line(tmp_path: Path, line: str, why: str) -> None:
    data = tmp_path / "piqa.jsonl"
    data.write_text(_lines(HONEST[:2]) + line + "\n")
    with pytest.raises(TaskDataError) as refused:
        _task(data).read()
    assert str(refused.value).startswith(f"{data}:3") and why in str(refused.value), str(refused.value)


def test_the_holdout_loss_uses_the_bytes_its_hash_names(tmp_path: Path) -> None:
    data = tmp_path / "holdout.txt"
    data.write_text("first document\nsecond document\n")
    plan = HoldoutPlan(data=data, seq_len=4, tokens=16, world_size=1, content=holdout_bytes(data))
    data.write_text("other text altogether\n")
    assert documents(plan.data, plan.content) == ["first document", "second document"]
    assert plan.data_sha256 == hashlib.sha256(b"first document\nsecond document\n").hexdigest()


def _tokenizer_dir(where: Path, words: list[str]) -> Path:
    """A transformers tokenizer directory (tokenizer.json, tokenizer_config.json, special_tokens_map.json)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<unk>", "</s>", *words])}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", eos_token="</s>").save_pretrained(str(where))
    return where


def test_the_tokenizer_used_is_the_bytes_read_even_when_its_files_change_after(tmp_path: Path) -> None:
    from recorder.checkpoints.evaluable import tokenizer_from
    from recorder.checkpoints.tokenizer_files import read_tokenizer_files

    place = _tokenizer_dir(tmp_path / "tok", ["the", "cat", "sat"])
    (place / "model.safetensors").write_bytes(b"weights are never read as tokenizer files")
    files = read_tokenizer_files(place)
    recorded = files.manifest()["files"]
    assert "model.safetensors" not in recorded and {"tokenizer.json", "tokenizer_config.json"} <= set(recorded)
    honest = {name: hashlib.sha256((place / name).read_bytes()).hexdigest() for name in recorded}
    _tokenizer_dir(place, ["sat", "cat", "the"])  # another vocabulary under the same names
    used = tokenizer_from(files)
    assert used.encode("the cat sat") == [2, 3, 4]  # the bytes read, not the files now on disk
    assert {name: f["sha256"] for name, f in recorded.items()} == honest


def test_a_tokenizer_file_that_is_no_regular_file_is_refused_at_once(tmp_path: Path) -> None:
    from recorder.checkpoints.tokenizer_files import read_tokenizer_files
    from recorder.untrusted.untrusted_files import IrregularFileError

    fifo = tmp_path / "tokenizer.json"
    os.mkfifo(fifo)
    with pytest.raises(IrregularFileError, match="FIFO"):
        read_tokenizer_files(fifo)
    place = tmp_path / "dir"
    place.mkdir()
    os.mkfifo(place / "tokenizer.json")
    with pytest.raises(IrregularFileError, match="FIFO"):
        read_tokenizer_files(place)
