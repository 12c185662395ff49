"""Data-parallel training: `torchrun --nproc-per-node 2 -m recorder train` on the CPU (gloo, FSDP2), against
the single-process default run (the session's `trained_run`) for the same global batch."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from recorder.store.kinds import RankStep
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run
from tests.helpers import run_cli
from trainer.config import load_config
from trainer.parallel.data_parallel import check_data_parallel
from trainer.parallel.distributed import Ranks

DEFAULT = load_config()
# The default config decides both: 64 prompts x 4 samples = 256, CEIL(2.5 + 3840/256) = 18 when written.
GBS, VALIDATION_START = DEFAULT.global_batch_size, DEFAULT.validation_start
WORLD = 2


@pytest.mark.parametrize("world", [1, 2, 3, 4, 7, 16])
def test_the_ranks_shares_are_the_whole_batch_in_order(world: int) -> None:
    for n in range(world, 40):
        shares = [Ranks(r, world).share(n) for r in range(world)]
        assert [p for s in shares for p in s] == list(range(n))  # the single process's prompts, in order
        assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_settings_data_parallel_cannot_run_are_named() -> None:
    sixteen = "num_generations_per_prompt=16"
    cfg = load_config(
        sets=["num_prompts_per_step=3", sixteen, "updates_per_rollout=1", "micro_batch_size=16", "rollout=vllm"]
    )
    problems = check_data_parallel(cfg, Ranks(0, 4))
    assert len(problems) == 2
    assert problems[0].startswith("num_prompts_per_step: 3 prompts cannot be shared by 4 ranks")
    assert problems[1].startswith("rollout: vllm")
    assert check_data_parallel(DEFAULT, Ranks(0, WORLD)) == []
    (mini,) = check_data_parallel(load_config(sets=["num_prompts_per_step=12", sixteen]), Ranks(0, WORLD))  # 4 updates
    assert mini.startswith("updates_per_rollout: 4 mini-batches of whole prompts on each of 2 ranks need")


def test_resume_under_torchrun_is_a_usage_error(tmp_path: Path) -> None:
    env = {**os.environ, "WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0"}
    exe = Path(sys.executable).parent / "recorder"
    done = subprocess.run(
        [str(exe), "train", "--resume", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "error: data-parallel training (torchrun) takes neither --resume nor --ray"


def test_nproc_refuses_before_launching_what_torchrun_would_report_per_rank(tmp_path: Path) -> None:
    n = DEFAULT.num_prompts_per_step
    too_many = run_cli("train", "--nproc", str(n + 1), "--root", str(tmp_path))
    assert too_many.returncode == 2
    assert too_many.stderr.startswith(f"error: num_prompts_per_step: {n} prompts cannot be shared by {n + 1} ranks")
    (tmp_path / "taken").mkdir()
    taken = run_cli("train", "--nproc", "2", "--root", str(tmp_path), "--run-id", "taken")
    assert taken.returncode == 2 and "run 'taken' already exists" in taken.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # nothing launched, nothing written


def _launch(root: Path, run_id: str) -> list[str]:
    """torchrun on a free port (--standalone), 2 ranks of `recorder train`, as a user launches it."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={WORLD}"]
    return [*torchrun, "-m", "recorder.cli", "train", "--root", str(root), "--run-id", run_id]


@pytest.fixture(scope="module")
def dp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default config trained by 2 processes to the validation start, as a user launches it, with the
    consolidated checkpoint (the sharded one is `dcp_run`'s)."""
    return _train(tmp_path_factory.mktemp("dp"), "dp", "safetensors")


@pytest.fixture(scope="module")
def dcp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same, with the default sharded checkpoint: every rank writes its own shard through torch DCP."""
    return _train(tmp_path_factory.mktemp("dcp"), "dcp", "dcp")


# One thread per rank on a small machine, and the CPU's own kernels: the single-process run the ranks are
# compared with (`trained_run`) trains inside this test process, where torch loaded before any pin could be
# set, so the ranks compute in its float order (and take its warm-up from the cache).
_RANK_ENV = {**os.environ, "OMP_NUM_THREADS": "1", "RECORDER_CPU_KERNELS": "native"}


def _train(root: Path, run_id: str, fmt: str) -> Path:
    command = [*_launch(root, run_id), "--set", f"max_steps={VALIDATION_START}", "--set", f"checkpoint.format={fmt}"]
    done = subprocess.run(command, capture_output=True, text=True, env=_RANK_ENV, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"trained {VALIDATION_START} steps ({GBS} samples each)" in done.stdout
    assert done.stdout.count("run: ") == 1  # rank 0 speaks for the run
    return root / run_id


def _of(run: Path, kind: str, writer: str = "trainer") -> list:
    return [e for e in read_run(RunDir.open(run)).events if e.kind == kind and e.writer == writer]


@pytest.mark.slow
def test_each_rank_records_its_own_segment_and_the_run_verifies(dp_run: Path) -> None:
    assert verify_run(dp_run).ok
    names = sorted(p.name for p in (dp_run / "events").iterdir())
    assert names == ["trainer-0001.arrows", "trainer-rank0-0001.arrows", "trainer-rank1-0001.arrows"]
    updates = {e.step: e for e in _of(dp_run, "weight_update")}
    metrics = {e.step: e for e in _of(dp_run, "step_metrics")}
    assert sorted(updates) == sorted(metrics) == list(range(1, VALIDATION_START + 1))
    per_rank = [[RankStep.from_event(e) for e in _of(dp_run, "rank_step", f"trainer-rank{r}")] for r in range(WORLD)]
    for step in range(1, VALIDATION_START + 1):
        mine = [steps[step - 1] for steps in per_rank]
        assert [m.rank for m in mine] == list(range(WORLD)) and {m.world_size for m in mine} == {WORLD}
        assert sum(m.samples for m in mine) == metrics[step].data["samples"] == GBS
        assert sum(m.tokens for m in mine) == metrics[step].data["tokens"]
        # weight_update is the last rank's: taken after every rank's optimizer step was done
        assert updates[step].time_ns >= max(m.optimizer_done_ns for m in mine)
        assert [m.checkpoint for m in mine] == [step >= VALIDATION_START] * WORLD
    assert _of(dp_run, "rank_step") == []  # the run's own segment holds one process's events, no rank facts


@pytest.mark.slow
def test_the_loss_curve_is_the_single_process_one(dp_run: Path, trained_run: Path) -> None:
    """Same global batch, same init: the same samples, so the same rewards; loss and gradient norm differ
    only by the order of float sums (measured: loss within 4e-9, gradient norm within 1e-6 relative)."""
    one = {e.step: e.data for e in _of(trained_run, "step_metrics")}
    two = {e.step: e.data for e in _of(dp_run, "step_metrics")}
    assert two[1]["tokens"] == one[1]["tokens"] and two[1]["reward"] == one[1]["reward"]
    for step in range(1, VALIDATION_START + 1):
        a, b = one[step], two[step]
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-3, abs=1e-5), step
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-3), step
        assert abs(b["reward"] - a["reward"]) <= 2 / GBS, step


@pytest.mark.slow
def test_the_checkpoint_is_consolidated_as_one_process_saves_it(dp_run: Path, trained_run: Path) -> None:
    from safetensors import safe_open

    def layout(run: Path) -> tuple[dict[str, tuple[str, tuple[int, ...]]], list[str]]:
        weights = run / "checkpoints" / f"step_{VALIDATION_START:07d}" / "model.safetensors"
        with safe_open(str(weights), "pt") as f:
            tensors = {k: (f.get_slice(k).get_dtype(), tuple(f.get_slice(k).get_shape())) for k in f.keys()}
            return tensors, sorted(f.metadata())

    assert layout(dp_run) == layout(trained_run)
    assert [e.step for e in _of(dp_run, "checkpoint_committed")] == [VALIDATION_START]


@pytest.mark.slow
def test_its_checkpoint_evaluates_and_its_run_replays_through_the_checkers(dp_run: Path) -> None:
    evaluated = run_cli("eval", str(dp_run))
    assert evaluated.returncode in (0, 1), evaluated.stderr  # 1: scored, but below the target
    results = _of(dp_run, "eval_result", "evaluator")
    assert [e.step for e in results] == [VALIDATION_START] and results[0].key == "accuracy"
    replayed = run_cli("replay", str(dp_run), "--check")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert re.search(r"^compliance checker \(mlperf-logging .*\): PASSED$", replayed.stdout, re.MULTILINE)


@pytest.mark.slow
def test_a_stopped_job_records_why_and_closes_every_segment(tmp_path: Path) -> None:
    """torchrun stops every rank with SIGTERM when one fails or the job is cancelled: rank 0 records train_stop."""
    import signal
    import time

    job = subprocess.Popen(
        [*_launch(tmp_path, "stopped"), "--set", f"max_steps={VALIDATION_START}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_RANK_ENV,
    )
    run = tmp_path / "stopped"
    deadline = time.monotonic() + 600
    while not (run.exists() and _of(run, "step_metrics")):  # stop it once it is training
        assert job.poll() is None and time.monotonic() < deadline, "training never reached step 1"
        time.sleep(1)
    job.send_signal(signal.SIGTERM)
    assert job.wait(timeout=300) != 0
    (stop,) = _of(run, "train_stop")
    assert stop.data["status"] == "failed" and "SIGTERM from torchrun" in stop.data["reason"]
    verified = run_cli("verify", str(run))
    assert verified.returncode == 0 and verified.stdout.count(" closed\n") == 3, verified.stdout


@pytest.mark.slow
def test_sharded_checkpoints_score_as_the_consolidated_ones_and_a_bad_shard_is_named(
    dcp_run: Path, dp_run: Path
) -> None:
    step_dir = dcp_run / "checkpoints" / f"step_{VALIDATION_START:07d}"
    assert sorted(p.name for p in step_dir.iterdir()) == [
        ".metadata", "__0_0.distcp", "__1_0.distcp", "config.json", "tokenizer.json"
    ]  # fmt: skip
    (commit,) = _of(dcp_run, "checkpoint_committed")
    assert commit.data["format"] == "torch-dcp" and commit.data["sha256"] == commit.data["manifest"]["root"]
    assert [s["path"] for s in commit.data["manifest"]["shards"]] == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    assert verify_run(dcp_run).ok
    for run in (dcp_run, dp_run):
        done = run_cli("eval", str(run))
        assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: scored, but below the target

    def completions(run: Path) -> list[str]:
        doc = json.loads((run / "derived" / "evals" / f"step_{VALIDATION_START:07d}" / "results.json").read_text())
        return [s["completion_sha256"] for s in doc["samples"]]

    assert completions(dcp_run) == completions(dp_run)
    shard = step_dir / "__1_0.distcp"
    honest = shard.read_bytes()
    data = bytearray(honest)
    data[len(data) // 2] ^= 1
    shard.write_bytes(bytes(data))
    try:
        found = verify_run(dcp_run)
        assert not found.ok and "__1_0.distcp" in str(found.problems)
        # a run that fails verify is not evaluated (the loader's own refusal: tests/checkpoints/test_formats.py)
        refused = run_cli("eval", str(dcp_run), "--all")
        assert refused.returncode != 0 and "__1_0.distcp" in refused.stderr.replace("\n", ""), refused.stderr
    finally:  # the run is the module's: the tests after this one read it honest
        shard.write_bytes(honest)


@pytest.mark.slow
def test_zero_shot_scores_a_sharded_step_directory_as_its_runs_step_with_the_holdout_check_on(
    dcp_run: Path, tmp_path: Path
) -> None:
    """A data-parallel run's step directory (DCP shards) is the recorder's own: zero-shot checks it by the
    fingerprint its training recorded (no training config asked for, no --holdout off), and a step that
    `recorder eval --harness` scored is shown as a row, scored earlier."""
    pytest.importorskip("lm_eval")
    import shutil

    from evaluator.harness.taskset import SHIPPED_DATA

    data = ["--tasks", "piqa", "--data-dir", str(SHIPPED_DATA)]
    step = f"checkpoints/step_{VALIDATION_START:07d}"
    fresh, scored = tmp_path / "fresh" / "dcp", tmp_path / "scored" / "dcp"
    for copy in (fresh, scored):
        shutil.copytree(dcp_run, copy, ignore=shutil.ignore_patterns("derived", "evaluator-*.arrows"))

    done = run_cli("zero-shot", str(fresh / step), "--holdout", "on", *data)
    assert done.returncode == 0, done.stdout + done.stderr
    (value,) = [e.value for e in read_run(RunDir.open(fresh)).events if e.kind == "eval_result" and e.key == "piqa"]
    [path] = (fresh / "eval_results" / f"step_{VALIDATION_START:07d}").glob("official_lmeval7_*/results.json")
    holdout = json.loads(path.read_text())["holdout"]
    assert holdout["mode"] == "fingerprint" and holdout["fingerprint"]["checked"] is True, holdout

    assert run_cli("eval", str(scored), "--harness", "lm-eval", *data).returncode == 0
    again = run_cli("zero-shot", str(scored / step), "--holdout", "on", *data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "scored earlier: piqa" in again.stdout
    rows = [line.split() for line in again.stdout.splitlines() if line.startswith(f"dcp/step_{VALIDATION_START}")]
    assert [cells[2] for cells in rows if not cells[0].endswith(":")] == [f"{value:.4f}"], again.stdout
    assert not list(scored.glob("eval_results/step_*/official_lmeval7_*"))  # nothing written for it
