"""`recorder train --resume RUN_DIR` after a SIGKILL: continues from the last committed checkpoint in a new
segment and finishes; the run verifies, evaluates, and replay marks it resumed. Refusals are exit 2."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from recorder.store.reader import read_run
from recorder.verify import verify_run
from tests.helpers import run_cli
from tests.reliability.crash import SMALL_TRAIN, check_checkpoints, recorder_exe

STEPS = 21  # checkpoints at 18..21


def _train_until(root: Path, run_id: str, kill_after: str | None) -> Path:
    """Train; SIGKILL the process group as soon as it prints a line starting with `kill_after`."""
    proc = subprocess.Popen(
        [recorder_exe(), "train", "--root", str(root), "--run-id", run_id, *SMALL_TRAIN, "--set", f"max_steps={STEPS}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if kill_after is not None and line.startswith(kill_after):
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.communicate(timeout=120)
    return root / run_id


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = _train_until(tmp_path_factory.mktemp("killed"), "k", "step 20/")
    assert not [e for e in read_run(run).events if e.kind == "train_stop"]  # it really died mid-run
    return run


def _copy(run: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy" / run.name
    shutil.copytree(run, dst)
    return dst


@pytest.fixture(scope="module")
def resumed(killed: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], Any]:
    """A copy of the killed run, resumed once (a training session: shared by the tests that need one):
    (the run, its events before, the finished `recorder train --resume`). The copy holds a checkpoint
    directory the killed session renamed into place but never committed."""
    run = _copy(killed, tmp_path_factory.mktemp("resumed"))
    before = read_run(run).events
    last = max(e.step for e in before if e.kind == "checkpoint_committed")
    orphan = run / "checkpoints" / f"step_{last + 1:07d}"
    if not orphan.exists():  # the kill landed before the rename: make the rename-then-die case explicitly
        shutil.copytree(run / "checkpoints" / f"step_{last:07d}", orphan)
    return run, before, run_cli("train", "--resume", str(run))


def test_resume_finishes_the_run(resumed: tuple[Path, list[Any], Any]) -> None:
    run, before, r = resumed
    last = max(e.step for e in before if e.kind == "checkpoint_committed")
    assert r.returncode == 0, r.stderr
    assert f"resuming {run} after step {last}" in r.stdout and "optimizer re-initialised" in r.stdout
    log = read_run(run)
    assert verify_run(run).ok and [s.name for s in log.segments] == ["trainer-0001.arrows", "trainer-0002.arrows"]
    # nothing of the killed session is lost: its events are a prefix, byte for byte
    assert [e for e in log.events if e.segment == "trainer-0001.arrows"] == before
    new = [e for e in log.events if e.segment == "trainer-0002.arrows"]
    opened = new[0]
    assert opened.kind == "run_opened" and opened.data["resumed_from"] == "k"
    assert (
        opened.data["resumed_at_step"] == last and opened.data["resumed_checkpoint"] == f"checkpoints/step_{last:07d}"
    )
    assert [e.step for e in new if e.kind == "weight_update"] == list(range(last + 1, STEPS + 1))
    assert new[-2].kind == "train_stop" and new[-2].data["status"] == "completed" and new[-2].step == STEPS
    commits = [e.step for e in log.events if e.kind == "checkpoint_committed"]
    assert sorted(commits) == list(range(18, STEPS + 1))  # each once, across both sessions
    check_checkpoints(run)
    # evaluation and replay work on it; replay and the scores say "resumed"
    ev = run_cli("eval", str(run), "--all")
    assert ev.returncode in (0, 1) and "Traceback" not in ev.stderr, ev.stderr
    rp = run_cli("replay", str(run))
    assert rp.returncode == 0 and rp.stdout.startswith("resumed:"), rp.stdout + rp.stderr
    rows = [json.loads(x) for x in (run / "derived" / "scores.jsonl").read_text().splitlines()]
    assert all(row["resumed"] is True and row["why"].startswith("RESUMED") for row in rows)
    cmp = run_cli("replay", str(run), "--compare")
    assert "RESUMED: the run was resumed" in " ".join(cmp.stdout.split())
    q = run_cli(
        "query", "--root", str(run.parent), "SELECT count(*) FROM scores WHERE why LIKE 'RESUMED%'", "--format", "csv"
    )
    assert q.returncode == 0 and q.stdout.split()[-1] == str(len(rows)), q.stdout + q.stderr


def test_uncommitted_checkpoint_dir_is_set_aside(resumed: tuple[Path, list[Any], Any]) -> None:
    run, _, r = resumed
    assert r.returncode == 0, r.stderr
    opened = next(e for e in read_run(run).events if e.segment == "trainer-0002.arrows")
    assert len(opened.data["set_aside"]) == 1 and ".uncommitted-" in opened.data["set_aside"][0]
    check_checkpoints(run)


def test_refusals(tmp_path: Path, killed: Path) -> None:
    run = _copy(killed, tmp_path)
    r = run_cli("train", "--resume", str(run), "--set", "seed=3")
    assert r.returncode == 2 and "drop --config, --set" in r.stderr
    last = max(e.step for e in read_run(run).events if e.kind == "checkpoint_committed")
    weights = run / "checkpoints" / f"step_{last:07d}" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    r = run_cli("train", "--resume", str(run))
    assert r.returncode == 2 and "[rule commit-sha]" in r.stderr and "Traceback" not in r.stderr
    assert len(list((run / "events").iterdir())) == 1  # refused before any event
    r = run_cli("train", "--resume", str(_killed_before_any_checkpoint(tmp_path / "early")))
    assert r.returncode == 2 and "no checkpoint was committed" in r.stderr
    r = run_cli("train", "--resume", str(tmp_path / "nope"))
    assert r.returncode == 2 and "no such run directory" in r.stderr


def _killed_before_any_checkpoint(root: Path) -> Path:
    """The log a trainer killed in its first steps leaves: its run_opened (config and all), no commit, no stop."""
    from recorder.store.log import LogWriter
    from recorder.store.run import RunDir
    from trainer.config import load_config

    run = RunDir.create(root, "e")
    with LogWriter(run, "trainer") as w:
        w.append(_opened(load_config(sets=list(SMALL_TRAIN[1::2]))))
    return run.path


def _opened(cfg: Any) -> Any:
    """The run_opened a trainer with `cfg` records first."""
    from recorder.store.kinds import RunOpened

    return RunOpened(
        benchmark=None,
        ruleset=None,
        division=None,
        global_batch_size=cfg.global_batch_size,
        config=cfg.to_dict(),
        provenance={},
        resumed_from=None,
    )


def test_a_completed_run_is_not_resumed(resumed: tuple[Path, list[Any], Any]) -> None:
    run, _, first = resumed
    assert first.returncode == 0, first.stderr
    r = run_cli("train", "--resume", str(run))
    assert r.returncode == 2 and "already completed" in r.stderr and "Traceback" not in r.stderr


def test_a_recorded_path_outside_the_run_is_refused(tmp_path: Path) -> None:
    """A well-formed log (valid digest chain: digests are not signatures) whose commit points outside the run."""
    from recorder.store.kinds import CheckpointCommitted
    from recorder.store.log import LogWriter
    from recorder.store.run import RunDir
    from trainer.config import load_config

    cfg = load_config(sets=["warmup.enabled=false"])
    outside = tmp_path / "evil" / "step_0000018"
    outside.mkdir(parents=True)
    (outside / "model.safetensors").write_bytes(b"")
    for rel in ("../../evil/step_0000018", str(outside)):
        run = RunDir.create(tmp_path / "runs", f"r{len(rel)}")
        with LogWriter(run, "trainer") as w:
            w.append(_opened(cfg))
            committed = CheckpointCommitted(
                path=rel,
                sha256="",
                bytes=0,
                weight_update_ns=None,
                save_begin_ns=None,
                save_end_ns=0,
                blocked_ns=None,
                fingerprint={},
                format="safetensors",
                dtype=None,
            )
            w.append(committed, step=18, samples_count=18 * 256)
        r = run_cli("train", "--resume", str(run.path))
        assert r.returncode == 2 and "leaves the run directory" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_an_altered_run_is_not_resumed(tmp_path: Path, killed: Path) -> None:
    run = _copy(killed, tmp_path)
    seg = run / "events" / "trainer-0001.arrows"
    raw = seg.read_bytes()
    at = raw.index(b"step_metrics", len(raw) // 2)
    seg.write_bytes(raw[:at] + b"step_metricz" + raw[at + 12 :])
    r = run_cli("train", "--resume", str(run))
    assert r.returncode == 2 and "fails verification" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(list((run / "events").iterdir())) == 1


@pytest.mark.slow  # the default tier keeps the resumed run's other checks; this one resumes again
def test_a_resumed_run_keeps_the_kernels_it_started_with(killed: Path, tmp_path: Path) -> None:
    """The tiny model trains pinned by default; a session resumed under RECORDER_CPU_KERNELS=native still
    computes pinned, as the run started: one run, one float order."""
    run = _copy(killed, tmp_path)
    env = os.environ | {"RECORDER_CPU_KERNELS": "native"}
    r = subprocess.run([recorder_exe(), "train", "--resume", str(run)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    kernels = [e.data["provenance"]["cpu_kernels"] for e in read_run(run).events if e.kind == "run_opened"]
    assert kernels == [{"aten": "DEFAULT", "mkl_cbwr": "COMPATIBLE"}] * 2, kernels
