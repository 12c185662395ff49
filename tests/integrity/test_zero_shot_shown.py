"""A zero-shot result shows a task's score only for that task's data, and only a value its metric can take.

Doctored task data (every choice made correct) scored and signed by the honest key is shown as not the
task, never as 1.0000: the result records the content hash of the rows it read, and that content is not the
task's (evaluator.harness.task_content). Scores of -5.0 or 1e308, the document rebound with its digest
recomputed, are refused as no score. The documents are written by the command's writer (`write_outputs`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from evaluator.harness.taskset import SHIPPED_DATA, TaskData
from evaluator.zero_shot.reporting.outputs import write_outputs
from recorder.signing import SIGNING_KEY_ENV, generate
from tests.helpers import run_cli
from tests.zero_shot.test_bound_results import _document


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    where = tmp_path / "fsdp2_epoch_2"
    where.mkdir()
    for rank in (0, 1):
        (where / f"__{rank}_0.distcp").write_bytes(bytes([rank]) * 64)
    return where


def _doctored_piqa(where: Path) -> TaskData:
    """The piqa records with both solutions made the right one: any model scores 1.0 on them."""
    rows = [json.loads(line) for line in (SHIPPED_DATA / "piqa.jsonl").read_text().splitlines() if line.strip()]
    right = [
        r | {"sol1": r["sol1" if r["label"] == 0 else "sol2"], "sol2": r["sol1" if r["label"] == 0 else "sol2"]}
        for r in rows
    ]
    data = where / "piqa.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in right))
    return TaskData(name="piqa", metric="acc_norm", config=SHIPPED_DATA / "piqa.yaml", data=data)


def test_a_score_on_doctored_task_data_is_shown_as_not_the_task(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generate(tmp_path / "alice")
    doctored = _doctored_piqa(tmp_path)
    doc = _document(checkpoint, 1.0, "2026-01-02T00:00:00+00:00")
    task = dict(doc.tasks["piqa"]) | {"data_sha256": doctored.data_sha256, "content_sha256": doctored.content_sha256}
    monkeypatch.setenv(SIGNING_KEY_ENV, str(tmp_path / "alice"))
    write_outputs(tmp_path / "out/doctored", dataclasses.replace(doc, tasks={"piqa": task}), "", "")
    write_outputs(tmp_path / "out/honest", _document(checkpoint, 0.5, "2026-01-01T00:00:00+00:00"), "", "")
    monkeypatch.delenv(SIGNING_KEY_ENV)
    done = run_cli("collect", str(tmp_path / "out"), "--trust", str(tmp_path / "alice.pub"), "--all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1.0000" not in done.stdout
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("tiny/")]
    assert sorted(r[2] for r in rows) == ["0.5000", "not-task"]
    [why] = [line for line in done.stdout.splitlines() if line.startswith("not the task: ")]
    assert why.startswith("not the task: tiny/run1/epoch_2 piqa: its data (content ")
    assert "of lm-eval piqa 1.0" in why
    [honest] = [line for line in done.stdout.splitlines() if " 0.5000 " in line]
    assert honest.endswith("test data")  # the project's own records are never the task either
