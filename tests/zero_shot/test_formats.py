"""`recorder zero-shot` on a DCP run directory, its snapshot and an fsdp2_epoch_N archive of the same weights
(written by torch.distributed.checkpoint under torchrun): the same scores, each result where it belongs;
the seven tasks by lm-eval's names from a local datasets directory, `--limit` examples per task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.zero_shot.task_sources import TASKS
from tests.helpers import run_cli

pytestmark = [pytest.mark.slow]
pytest.importorskip("lm_eval")


def _one(base: Path) -> Path:
    [found] = list(base.glob("official_lmeval7_*/results.json"))
    return found


def test_run_snapshot_and_archive_of_the_same_weights_score_the_same(training: Path, hf_cache: Path) -> None:
    run, snapshot, archive = training / "run", training / "run/snapshots/step_20", training / "fsdp2_epoch_1"
    done = run_cli(
        "zero-shot",
        str(run),
        str(snapshot),
        str(archive),
        "--hf-cache",
        str(hf_cache),
        "--limit",
        "8",
        "--tasks",
        ",".join(TASKS).replace("social_iqa", "siqa"),
        "--workers",
        "1",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    places = {
        "run": run / "eval_results",
        "snapshot": run / "eval_results/step_0000020",
        "archive": archive / "eval_results",
    }
    docs = {kind: json.loads(_one(base).read_text()) for kind, base in places.items()}
    scores = {kind: d["scores"] for kind, d in docs.items()}
    assert list(scores["run"]) == list(TASKS)  # lm-eval's names, siqa given as its alias
    assert scores["run"] == scores["snapshot"] == scores["archive"]
    for kind, doc in docs.items():
        assert {k: (t["n"], t["of"]) for k, t in doc["tasks"].items()} == {k: (8, 24) for k in TASKS}, kind
        assert all(len(t["data_sha256"]) == 64 and t["stderr"] is not None for t in doc["tasks"].values())
        assert doc["checkpoint"]["format"] == "torch-dcp" and doc["checkpoint"]["step"] == 20
        assert doc["checkpoint"]["train_world_size"] == 2
        assert doc["settings"]["dtype"] == "fp32" and doc["settings"]["device"] == "cpu"
        assert doc["holdout"]["passed"] and doc["holdout"]["gap"] <= 0.005, doc["holdout"]
        folder = _one(places[kind]).parent
        summary = (folder / "summary.txt").read_text()
        assert summary.splitlines()[0].split()[:3] == ["checkpoint", "step", "arc_easy"]
        assert len(summary.splitlines()) == 4  # header + three checkpoints
        log = (folder / "eval.log").read_text()
        assert summary in log and done.stdout.count("holdout eval/loss") == 3
    # the archive's weights are the run's final ones, byte for byte
    shards = lambda d: {f["path"]: f["sha256"] for f in d["checkpoint"]["manifest"]["shards"]}
    assert shards(docs["archive"]) == shards(docs["run"])
    assert not (archive / "eval_results/step_0000020").exists() and not (snapshot / "eval_results").exists()


def test_per_sample_logs_on_request_and_collect_prints_the_table_again(training: Path, hf_cache: Path) -> None:
    run = training / "run"
    args = ["--hf-cache", str(hf_cache), "--limit", "2", "--tasks", "piqa", "--log-samples"]
    done = run_cli("zero-shot", str(run), *args)
    assert done.returncode == 0, done.stdout + done.stderr
    samples = json.loads(_one(run / "eval_results").read_text())["tasks"]["piqa"]["samples"]
    assert [s["doc_id"] for s in samples] == [0, 1] and all(len(s["loglikelihoods"]) == 2 for s in samples)
    table = _one(run / "eval_results").with_name("summary.txt").read_text()
    again = run_cli("collect", str(run), "--all")  # a --limit result is a smoke test: shown with --all
    assert again.returncode == 0, again.stderr
    assert table in done.stdout
    # the same rows again, each noted unsigned (no --trust key checked who wrote it), and a line saying so
    shown, unsigned = again.stdout.splitlines(), table.splitlines()
    assert [" ".join(x.split()) for x in shown[1 : len(unsigned)]] == [
        " ".join(x.split()) + (", unsigned" if "test data" in x else "  unsigned").replace("  ", " ")
        for x in unsigned[1:]
    ], again.stdout
    assert shown[len(unsigned)].startswith("unsigned: "), again.stdout
