"""Bad input to `recorder zero-shot` gets one error line naming the file and the fix, exit 2, and nothing is
written; the holdout packing, the logged-loss reader, the task names and the table on their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.harness.task_content import PINS_ENV
from evaluator.harness.taskset import METRICS, SHIPPED_DATA
from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.holdout_check.holdout import documents, holdout_loss, rank_rows
from evaluator.zero_shot.holdout_check.reference import logged_loss
from evaluator.zero_shot.origin.training_run import HoldoutPlan
from evaluator.zero_shot.reporting.outputs import table
from evaluator.zero_shot.task_sources import parse_task_names
from recorder.results.harness import HarnessTask
from recorder.results.zero_shot import RecordedEvents, StepCheckpoint, StepSettings, ZeroShotStepResults
from recorder.untrusted.tree_walk import TreeWalkError
from tests.helpers import run_cli
from trainer.policy.tokenizer import from_json


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _fake_run(root: Path, logged_steps: list[int]) -> Path:
    """A run directory laid out as a DCP training run writes it (the shards are not read before the checks)."""
    run = root / "run"
    (run / "tokenizer").mkdir(parents=True)
    (run / "data").mkdir()
    for name in (".metadata", "__0_0.distcp", "__1_0.distcp"):
        (run / name).write_bytes(b"")
    (run / "meta.json").write_text(json.dumps({"step": 30}))
    (run / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": 8}))
    (run / "tokenizer/tokenizer.json").write_text(json.dumps({"type": "char", "chars": "ab", "specials": []}))
    (run / "data/holdout.txt").write_text("ab\nba\n")
    training = {"data": {"holdout": "data/holdout.txt", "seq_len": 4}, "eval": {"tokens": 64}, "world_size": 2}
    (run / "training.json").write_text(json.dumps(training))
    rows = [{"step": s, "value": 2.0} for s in logged_steps]
    (run / "tensorboard_scalars.json").write_text(json.dumps({"eval/loss": rows}))
    return run


def _refused(*args: str) -> str:
    done = run_cli("zero-shot", *args, "--data-dir", str(SHIPPED_DATA))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert done.stdout == ""
    return " ".join(done.stderr.split())  # rich may wrap a long line: compare words


def test_a_path_that_is_no_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/readme.txt").write_text("hello")
    before = _files(tmp_path)
    message = _refused(str(tmp_path / "notes"))
    assert str(tmp_path / "notes") in message and "give a run directory" in message
    assert _files(tmp_path) == before


def test_an_archive_whose_source_does_not_exist(tmp_path: Path) -> None:
    archive = tmp_path / "fsdp2_epoch_3"
    archive.mkdir()
    for name in (".metadata", "__0_0.distcp"):
        (archive / name).write_bytes(b"")
    (archive / "final_meta.json").write_text(json.dumps({"source": str(tmp_path / "gone"), "step": 3}))
    before = _files(tmp_path)
    message = _refused(str(archive))
    assert str(archive / "final_meta.json") in message and "does not exist" in message and "restore" in message
    assert _files(tmp_path) == before


def test_an_unknown_task(tmp_path: Path) -> None:
    run = _fake_run(tmp_path, [30])
    before = _files(tmp_path)
    message = _refused(str(run), "--tasks", "arc_easy,nope")
    assert "unknown task(s) nope" in message and "social_iqa" in message
    assert _files(tmp_path) == before


def test_a_holdout_file_without_the_step(tmp_path: Path) -> None:
    run = _fake_run(tmp_path, [10, 20])
    before = _files(tmp_path)
    message = _refused(str(run))
    assert str(run / "tensorboard_scalars.json") in message and "no eval/loss at step 30" in message
    assert "logged at steps: 10, 20" in message and "--holdout record" in message
    assert _files(tmp_path) == before


def test_holdout_data_a_user_can_fix_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "holdout.jsonl"
    bad.write_text('{"text": "ab"}\n{"body": "ba"}\n')
    with pytest.raises(ZeroShotInputError, match=r"holdout.jsonl: record 2 is not a JSON object with a \"text\""):
        documents(bad)
    short = tmp_path / "holdout.txt"
    short.write_text("ab\n")
    plan = HoldoutPlan(data=short, seq_len=4, tokens=64, world_size=2)
    tokenizer = from_json(json.dumps({"type": "char", "chars": "ab", "specials": []}))
    with pytest.raises(ZeroShotInputError, match="too little text .* on each of 2 ranks; give --holdout-data"):
        holdout_loss(None, tokenizer, plan, batch_size=1)


def test_the_training_world_size_changes_the_packing() -> None:
    docs = [[i] * 3 for i in range(8)]  # eight documents of three tokens
    one = rank_rows(docs, HoldoutPlan(data=Path("x"), seq_len=2, tokens=8, world_size=1))
    two = rank_rows(docs, HoldoutPlan(data=Path("x"), seq_len=2, tokens=8, world_size=2))
    assert one == [[[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]]]
    assert two == [[[0, 0, 0], [2, 2, 2]], [[1, 1, 1], [3, 3, 3]]]  # rank r: documents r, r+2, ...


def test_the_logged_loss_from_a_tensorboard_event_file(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(tmp_path / "tb"))
    for step, value in ((100, 3.5), (200, 3.25)):
        writer.add_scalar("eval/loss", value, step)
    writer.add_scalar("train/loss", 9.0, 300)
    writer.close()
    found = logged_loss(tmp_path, 200)
    assert (found.value, found.step, found.source) == (3.25, 200, tmp_path / "tb")
    with pytest.raises(ZeroShotInputError, match="no eval/loss at step 300 .logged at steps: 100, 200"):
        logged_loss(tmp_path, 300)


def test_event_files_in_two_folders_are_refused_naming_both(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    for folder, value in (("tb", 3.25), ("tb_old", 7.0)):
        writer = SummaryWriter(str(tmp_path / folder))
        writer.add_scalar("eval/loss", value, 200)
        writer.close()
    with pytest.raises(ZeroShotInputError, match=r"in 2 folders \(.*/tb, .*/tb_old\): which one logged"):
        logged_loss(tmp_path, 200)


def test_event_files_nested_deeper_than_a_walk_goes_are_refused_naming_the_folder(tmp_path: Path) -> None:
    deep = tmp_path
    for _ in range(200):
        deep = deep / "d"
    deep.mkdir(parents=True)
    with pytest.raises(TreeWalkError, match="nested more than"):
        logged_loss(tmp_path, 200)


def test_task_names_are_lm_evals_with_siqa_as_an_alias() -> None:
    assert parse_task_names("arc_easy, siqa,social_iqa") == ["arc_easy", "social_iqa"]
    with pytest.raises(ZeroShotInputError, match="unknown task.*easy_qa"):
        parse_task_names("easy_qa")


OFFICIAL = "c" * 64  # the content these results' tasks record, pinned as the official split below


@pytest.fixture
def pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pins = tmp_path / "pins.txt"
    pins.write_text("".join(f"{t} 1.0 {OFFICIAL}\n" for t in ("piqa", "arc_easy", "arc_challenge", "hellaswag")))
    monkeypatch.setenv(PINS_ENV, str(pins))


def _task(name: str) -> HarnessTask:
    return HarnessTask(
        metric=METRICS[name], score=0.0, n=1, of=1, metrics={}, version="1.0", data_file="", data_sha256="",
        content_sha256=OFFICIAL, config_sha256="", samples=(),
    )  # fmt: skip


def _result(label: str, step: int, scores: dict[str, float], holdout: dict[str, Any]) -> ZeroShotStepResults:
    """A result whose fields the table does not show are placeholders; its tasks' data are pinned."""
    return ZeroShotStepResults(
        label=label,
        scores=scores,
        checkpoint=StepCheckpoint(path=label, kind="recorder-run", format="recorder", step=step, sha256="0" * 64),
        settings=StepSettings(
            batch_size=1, examples_limit=None, max_length=None, encoding="", workers="local", limit=None, dtype="fp32"
        ),
        holdout=holdout,
        events=RecordedEvents(writer="harness", segment=None, results=""),
        tasks={name: _task(name) for name in scores},
        finished="",
    )


def test_the_table_lines_up_tasks_first_seen_and_averages(pinned: None) -> None:
    docs = [
        _result("run", 20, {"piqa": 0.5, "arc_easy": 0.25}, {"recomputed": 2.5}),
        _result("run/step_10", 10, {"piqa": 0.75}, {"mode": "off"}),
    ]
    assert table(docs).splitlines() == [
        "checkpoint   step    piqa  arc_easy  average  holdout",
        "run            20  0.5000    0.2500   0.3750   2.5000",
        "run/step_10    10  0.7500         -   0.7500        -",
    ]


def test_the_table_in_blocks_that_fit_a_width_and_as_lines_below_it(pinned: None) -> None:
    tasks = ["arc_easy", "arc_challenge", "hellaswag"]
    docs = [
        _result("a-long-run-name/step_20", 20, dict.fromkeys(tasks, 0.5), {}),
        _result("b/step_10", 10, {"hellaswag": 0.25}, {}),
    ]
    assert table(docs, 60).splitlines() == [
        "checkpoint               step  arc_easy  arc_challenge",
        "a-long-run-name/step_20    20    0.5000         0.5000",
        "b/step_10                  10         -              -",
        "",
        "checkpoint               step  hellaswag  average  holdout",
        "a-long-run-name/step_20    20     0.5000   0.5000        -",
        "b/step_10                  10     0.2500   0.2500        -",
    ]
    assert table(docs, 200) == table(docs)  # wide enough: one block, as in the files
    assert table(docs, 40).splitlines()[:7] == [
        "a-long-run-name/step_20",
        "  step: 20",
        "  arc_easy: 0.5000",
        "  arc_challenge: 0.5000",
        "  hellaswag: 0.5000",
        "  average: 0.5000",
        "  holdout: -",
    ]
