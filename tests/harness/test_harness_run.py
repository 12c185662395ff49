"""`recorder eval --harness lm-eval` on the session's default trained run (two checkpoints, 18 and 19):
integrity checks, eval events keyed by task, results.json, batch-size invariance, resume, history."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evaluator.harness.taskset import DEFAULT_TASKS, ENV, SHIPPED_DATA
from recorder.results.harness import HarnessResults
from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from tests.cli.shell import run_main
from tests.helpers import run_cli
from tests.results_shape import assert_written_in_shape

pytest.importorskip("lm_eval")
pytest.importorskip("torch")

DATA = str(SHIPPED_DATA)


def _copy(trained_run: Path, where: Path) -> Path:
    run = where / trained_run.name
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns("derived"))
    for seg in [*run.glob("events/evaluator-*.arrows"), *run.glob("events/harness-*.arrows")]:
        seg.unlink()
    return run


def _harness(run: Path, *args: str) -> tuple[int, str]:
    done = run_cli("eval", str(run), "--harness", "lm-eval", "--data-dir", DATA, *args)
    return done.returncode, done.stdout + done.stderr


def _scores(run: Path) -> dict[tuple[int, str], float]:
    return {(e.step, e.key): e.value for e in read_run(run).events if e.kind == "eval_result" and e.writer == "harness"}


@pytest.fixture(scope="module")
def scored_pair(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two copies of the trained run scored on every default task in this process (the scores, not the
    process, are what the tests read): both checkpoints at batch size 1, checkpoint 19 at batch size 7."""
    runs = []
    with pytest.MonkeyPatch.context() as env:  # the harness sets the Hugging Face offline switches: undone after
        env.delenv("HF_HUB_OFFLINE", raising=False)
        env.delenv("HF_DATASETS_OFFLINE", raising=False)
        for bs, steps in ((1, "18,19"), (7, "19")):
            run = _copy(trained_run, tmp_path_factory.mktemp(f"harness-bs{bs}"))
            done = run_main("eval", str(run), "--harness", "lm-eval", "--data-dir", DATA, "--batch-size", str(bs),
                            "--steps", steps)  # fmt: skip
            assert done.code == 0, done.out + done.err
            runs.append(run)
    return runs[0], runs[1]


def test_both_checkpoints_scored_on_every_task_with_the_same_scores_for_two_batch_sizes(
    scored_pair: tuple[Path, Path],
) -> None:
    one, seven = scored_pair
    scores = _scores(one)
    assert set(scores) == {(s, t) for s in (18, 19) for t in DEFAULT_TASKS}
    assert all(0.0 <= v <= 1.0 for v in scores.values())
    assert _scores(seven) == {k: v for k, v in scores.items() if k[0] == 19}
    # the log-likelihoods behind them agree too (float32 batched matmuls: to ~1e-6, not bit for bit)
    for step in (19,):
        docs = [
            HarnessResults.from_json(
                next((run / "derived/evals").glob(f"step_{step:07d}/harness/*/results.json")).read_bytes()
            )
            for run in scored_pair
        ]
        for task in DEFAULT_TASKS:
            a, b = (d.tasks[task].samples for d in docs)
            assert [x["doc_hash"] for x in a] == [x["doc_hash"] for x in b]
            lls = [
                (p, q)
                for x, y in zip(a, b, strict=False)
                for p, q in zip(x["loglikelihoods"], y["loglikelihoods"], strict=False)
            ]
            assert max(abs(p - q) for p, q in lls) < 1e-4


def test_events_are_keyed_by_task_and_results_json_holds_the_evidence(
    scored_pair: tuple[Path, Path], trained_run: Path
) -> None:
    run = scored_pair[0]
    events = [e for e in read_run(run).events if e.writer == "harness"]
    committed = {e.step: e for e in read_run(trained_run).events if e.kind == "checkpoint_committed"}
    for step in (18, 19):
        mine = [e for e in events if e.step == step]
        assert [e.kind for e in mine] == ["eval_start", *["eval_result"] * len(DEFAULT_TASKS), "eval_stop"]
        start, *results, _ = mine
        assert start.data["harness"] == "lm-eval" and start.data["tasks"] == list(DEFAULT_TASKS)
        assert start.data["sha256"] == committed[step].data["sha256"]
        assert [r.key for r in results] == list(DEFAULT_TASKS)
        assert all(r.samples_count == committed[step].samples_count for r in mine)
        path = run / results[0].data["results"]
        import hashlib

        assert hashlib.sha256(path.read_bytes()).hexdigest() == results[0].data["results_sha256"]
        doc = json.loads(path.read_text())
        assert doc["checkpoint"]["sha256"] == committed[step].data["sha256"]
        assert doc["fingerprint"]["checked"] is True and doc["fingerprint"]["max_abs_diff"] <= 0.005
        assert doc["harness"]["version"].startswith("0.4.") and doc["harness"]["num_fewshot"] == 0
        assert doc["provenance"] and doc["settings"]["batch_size"] == 1
        assert_written_in_shape(path, "harness")
        for r in results:
            t = doc["tasks"][r.key]
            assert t["score"] == r.value and t["metric"] == r.data["metric"] and t["n"] == r.data["n"] == 24
            assert len(t["samples"]) == 24 and all(s["prompt_hash"] and s["doc_hash"] for s in t["samples"])
            assert t["version"] is not None and len(t["data_sha256"]) == 64
    done = run_cli("verify", str(run))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # the default tier keeps the scored pair's tests; each of these scores checkpoints again
def test_query_shows_zero_shot_scores_per_step_beside_the_benchmark_accuracy(
    scored_pair: tuple[Path, Path], tmp_path: Path
) -> None:
    run = tmp_path / scored_pair[0].name  # a copy: the benchmark's evaluations are added to it
    shutil.copytree(scored_pair[0], run)
    done = run_cli("eval", str(run), "--all")  # the benchmark, after the harness: nothing of it was "scored"
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 evaluated" in done.stdout and "closed an interrupted" not in done.stdout
    sql = (
        "SELECT step, max(value) FILTER (key = 'accuracy') AS accuracy, max(value) FILTER (key = 'arc_easy') "
        "AS arc_easy, max(value) FILTER (key = 'winogrande') AS winogrande FROM evals GROUP BY step ORDER BY step"
    )
    done = run_cli("query", "--root", str(run.parent), sql, "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]  # JSON lines
    scores = _scores(run)
    assert [r["step"] for r in rows] == [18, 19]
    for r in rows:
        assert 0 < r["accuracy"] <= 1
        assert r["arc_easy"] == pytest.approx(scores[(r["step"], "arc_easy")])
        assert r["winogrande"] == pytest.approx(scores[(r["step"], "winogrande")])
    sql = "SELECT writer, key, step, eval_order, metric, passed FROM evals ORDER BY writer, step, key"
    rows = [
        json.loads(line)
        for line in run_cli("query", "--root", str(run.parent), sql, "--format", "json").stdout.splitlines()
    ]
    bench = [r for r in rows if r["writer"] == "evaluator"]
    assert [(r["step"], r["eval_order"]) for r in bench] == [(18, 1), (19, 2)]  # harness rows ranked apart
    zero = [r for r in rows if r["writer"] == "harness"]
    assert {r["metric"] for r in zero} == {"acc", "acc_norm"} and all(r["passed"] is None for r in zero)
    table = run_cli("evals", str(run)).stdout
    assert "zero-shot tasks" in table and "arc_easy" in table and "2 evaluations" in table


@pytest.mark.slow  # the default tier keeps the scored pair's tests; each of these scores checkpoints again
def test_ray_workers_give_the_same_scores(
    scored_pair: tuple[Path, Path], trained_run: Path, tmp_path: Path, ray_cluster: None
) -> None:
    from evaluator.harness.run_session import HarnessOptions, evaluate_harness
    from evaluator.order import parse_order
    from evaluator.settings import Options

    run = _copy(trained_run, tmp_path)
    summary = evaluate_harness(
        run,
        HarnessOptions(
            tasks=["arc_challenge", "winogrande"],
            data_dir=SHIPPED_DATA,
            evaluation=Options(order=parse_order("19"), workers=2, batch_size=5),
        ),
    )
    assert [o.status for o in summary.outcomes] == ["scored"], summary
    expected = {k: v for k, v in _scores(scored_pair[0]).items() if k[0] == 19 and k[1] in summary.outcomes[0].scores}
    assert _scores(run) == expected and len(expected) == 2
    start = next(e for e in read_run(run).events if e.kind == "eval_start")
    assert start.data["worker"].startswith("ray:2")


@pytest.mark.slow  # the default tier keeps the scored pair's tests; each of these scores checkpoints again
def test_a_second_session_scores_only_missing_tasks(trained_run: Path, tmp_path: Path) -> None:
    run = _copy(trained_run, tmp_path)
    rc, out = _harness(run, "--tasks", "piqa", "--steps", "19")
    assert rc == 0, out
    rc, out = _harness(run, "--tasks", "piqa", "--steps", "19")
    assert rc == 0 and "nothing to do" in out, out
    assert sorted(p.name for p in (run / "events").glob("harness-*")) == ["harness-0001.arrows"]
    rc, out = _harness(run, "--tasks", "piqa,siqa", "--limit", "1")
    assert rc == 0 and "not evaluated (--limit): steps 19" in out, out
    events = [e for e in read_run(run).events if e.writer == "harness" and e.kind == "eval_result"]
    assert [(e.segment, e.step, e.key) for e in events] == [
        ("harness-0001.arrows", 19, "piqa"),
        ("harness-0002.arrows", 18, "piqa"),
        ("harness-0002.arrows", 18, "siqa"),
    ]


@pytest.mark.slow  # the default tier keeps the scored pair's tests; each of these scores checkpoints again
def test_an_interrupted_harness_session_is_closed_by_the_next_one_not_by_the_benchmark(
    trained_run: Path, tmp_path: Path
) -> None:
    run = _copy(trained_run, tmp_path)
    [commit] = [e for e in read_run(run).events if e.kind == "checkpoint_committed" and e.step == 18]
    with LogWriter(RunDir.open(run), "harness") as w:  # a harness session killed inside step 18
        w.append(
            "eval_start",
            step=18,
            data={"checkpoint": commit.data["path"], "sha256": commit.data["sha256"], "worker": "local"},
        )
    from evaluator.attempts import attempts

    assert attempts(read_run(run).events) == []  # the benchmark evaluator does not see it
    rc, out = _harness(run, "--tasks", "arc_easy", "--steps", "18")
    assert rc == 0 and "closed an interrupted evaluation: step 18 (harness-0001.arrows)" in out, out
    failed = [e for e in read_run(run).events if e.kind == "eval_failed"]
    assert [(e.writer, e.data["interrupted_segment"]) for e in failed] == [("harness", "harness-0001.arrows")]


@pytest.mark.slow  # the default tier keeps the scored pair's tests; each of these scores checkpoints again
def test_a_tampered_checkpoint_is_refused_and_recorded(trained_run: Path, tmp_path: Path) -> None:
    run = _copy(trained_run, tmp_path)
    weights = run / "checkpoints" / "step_0000019" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    # The run fails verify (its commit names other weights): refused before anything is recorded.
    rc, out = _harness(run, "--tasks", "arc_easy")
    assert rc == 1 and "[rule commit-sha]" in out and "--force" in out, out
    assert not [e for e in read_run(run).events if e.writer == "harness"]
    # Forced, each checkpoint's own hash check still refuses step 19 and records why.
    rc, out = _harness(run, "--tasks", "arc_easy", "--force")
    assert rc == 1 and "1 evaluation(s) failed (steps 19)" in out, out
    events = [e for e in read_run(run).events if e.writer == "harness" and e.kind.startswith("eval_")]
    assert [(e.kind, e.step) for e in events] == [
        ("eval_start", 18),
        ("eval_result", 18),
        ("eval_stop", 18),
        ("eval_start", 19),
        ("eval_failed", 19),
    ]
    assert events[-1].data["error"] == "HashMismatchError"
    assert "HashMismatchError" in run_cli("evals", str(run)).stdout


def test_bad_options_and_missing_data_are_input_errors(
    trained_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    run = str(trained_run)
    for args, message in [
        (["--harness", "lm-eval"], f"set {ENV}=DIR"),
        (
            ["--harness", "lm-eval", "--data-dir", str(tmp_path), "--tasks", "siqa"],
            f"siqa (put it at {tmp_path / 'siqa.jsonl'})",
        ),
        (["--harness", "lm-eval", "--tasks", "mmlu"], "unknown task(s) mmlu"),
        (["--tasks", "piqa"], "add --harness lm-eval"),
        (["--harness", "lm-eval", "--all"], "--all"),
        (["--harness", "lm-eval", "--steps", "17", "--data-dir", DATA], "17"),
    ]:
        done = run_main("eval", run, *args)  # in this process: an uncaught exception fails the test
        assert done.code == 2, (args, done.out + done.err)
        assert message in done.out + done.err and "Traceback" not in done.err, (args, done.err)
    assert not list((trained_run / "events").glob("harness-*"))
