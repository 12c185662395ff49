"""Ctrl-C in any command, at any moment: exit 130 and one line saying what was kept, or the command had
already finished; and every run left behind verifies.

Real processes, real SIGINT. The signal is sent at fixed times, but no outcome depends on where it lands:
before the command starts (one line, nothing done), inside it (one line, what it kept), or after it
finished (its own exit status). Every run the command leaves must verify.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.kit.synthetic import record_run

EXE = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
STARTING = "recorder: interrupted while starting; nothing was done"


def _started(p: subprocess.Popen[str]) -> bool:
    """Whether the process is past the interpreter's own start (it has loaded pyarrow, which `recorder`
    imports just after it begins to handle Ctrl-C): a SIGINT before that is Python's, not the command's."""
    try:
        return "pyarrow" in Path(f"/proc/{p.pid}/maps").read_text()
    except OSError:
        return p.poll() is not None


def _interrupt(
    args: list[str],
    after_s: float,
    wait_for: Callable[[subprocess.Popen[str]], None] | None = None,
    *,
    signals: int = 1,
) -> tuple[int, str, str]:
    p = subprocess.Popen(
        [EXE, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's Ctrl-C finds it
    )
    deadline = time.monotonic() + 120
    while not _started(p) and time.monotonic() < deadline:
        time.sleep(0.02)
    if wait_for is not None:
        wait_for(p)
    time.sleep(after_s)
    for _ in range(signals):  # a second Ctrl-C lands while the command records how it stopped
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        time.sleep(0.01)
    out, err = p.communicate(timeout=300)
    return p.returncode, out, err


def _assert_safe(rc: int, out: str, err: str, command: str, finished: tuple[int, ...] = (0,)) -> None:
    assert "Traceback" not in out + err and "Aborted" not in err, out + err
    if rc == 130:
        said = [x for x in err.splitlines() if x.strip()]
        last = said[-1] if said else ""
        assert last == STARTING or last.startswith(f"{command}: interrupted") or last.startswith("interrupted"), err
        assert sum("interrupted" in x for x in said) == 1, err  # one line says it
    else:
        assert rc in finished, (rc, out, err)


def _assert_runs_verify(root: Path) -> None:
    if not root.is_dir():
        return
    for run in sorted(p for p in root.iterdir() if p.is_dir()):
        done = run_cli("verify", str(run))
        assert done.returncode == 0 and "verify: intact" in done.stdout, (run, done.stdout, done.stderr)


@pytest.mark.parametrize("after_s", [0.5, 1.0, *(pytest.param(t, marks=pytest.mark.slow) for t in (2.0, 5.0))])
def test_ctrl_c_in_the_first_seconds_of_train_leaves_no_run_or_one_that_verifies(
    tmp_path: Path, after_s: float
) -> None:
    pytest.importorskip("torch")

    def said_starting(p: subprocess.Popen[str]) -> None:  # the first seconds of training proper
        assert p.stderr is not None
        first = p.stderr.readline()
        assert first.startswith("train: starting") or p.poll() is not None, first

    root = tmp_path / "runs"
    rc, out, err = _interrupt(
        ["train", "--root", str(root), "--run-id", "sig", "--set", "warmup.enabled=false"], after_s, said_starting
    )
    _assert_safe(rc, out, err, "train")
    _assert_runs_verify(root)
    if (root / "sig").exists():
        assert (root / "sig" / "events").is_dir() and any((root / "sig" / "events").iterdir())


@pytest.fixture(scope="module")
def evaluable_original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.evaluator.synth import record_run as record_with_checkpoints

    return record_with_checkpoints(tmp_path_factory.mktemp("evaluable") / "runs", steps=20, target=1.0, samples=40).path


@pytest.fixture
def evaluable(evaluable_original: Path, tmp_path: Path) -> Path:
    """A copy of the recorded run, for a test to evaluate (and interrupt) on its own."""
    run = tmp_path / "runs" / evaluable_original.name
    shutil.copytree(evaluable_original, run, symlinks=True)
    return run


def _first_result(p: subprocess.Popen[str]) -> None:
    """Until eval prints its first step's line: the next evaluation has begun (or the command ended)."""
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.startswith("step ") or p.poll() is not None, line


def _loading_torch(p: subprocess.Popen[str]) -> None:
    """Until the command loads torch (eval: its worker, after verifying the run, before any evaluation)."""
    deadline = time.monotonic() + 120
    while p.poll() is None and time.monotonic() < deadline:
        try:
            if "libtorch" in Path(f"/proc/{p.pid}/maps").read_text():
                return
        except OSError:
            return
        time.sleep(0.01)


@pytest.mark.parametrize(
    ("after_s", "wait_for", "signals"),
    [
        (0.0, _loading_torch, 1),  # while its worker loads torch: before any evaluation
        (0.5, _first_result, 1),  # in the second evaluation
        pytest.param(0.5, _first_result, 2, marks=pytest.mark.slow),  # and again while it records that
        pytest.param(4.0, None, 1, marks=pytest.mark.slow),
    ],
    ids=["before-any", "during-one", "twice", "4s"],
)
def test_ctrl_c_during_eval_records_the_evaluation_as_interrupted(
    evaluable: Path, after_s: float, wait_for: Callable[[subprocess.Popen[str]], None] | None, signals: int
) -> None:
    pytest.importorskip("torch")
    from evaluator.attempts import attempts
    from recorder.store.reader import read_run

    args = ["eval", str(evaluable), "--all", "--batch-size", "1"]
    rc, out, err = _interrupt(args, after_s, wait_for, signals=signals)
    _assert_safe(rc, out, err, "eval", finished=(1,))  # finished: nothing passes target 1.0
    _assert_runs_verify(evaluable.parent)
    shown = run_cli("evals", str(evaluable))
    assert shown.returncode == 0 and " failed " not in shown.stdout and " running " not in shown.stdout, shown.stdout
    tried = attempts(read_run(evaluable).events)
    assert all(a.status in ("scored", "interrupted") for a in tried), [(a.step, a.status) for a in tried]
    said = err.strip().splitlines()[-1] if rc == 130 else ""
    stopped = [a.step for a in tried if a.status == "interrupted"]
    if said.startswith("eval: interrupted before any evaluation started"):
        assert tried == [] and "no evaluation was recorded" in said, said
    elif said.startswith("eval: interrupted; "):  # the evaluation it names is recorded as interrupted, now
        (step,) = stopped
        assert f"the one running (step {step}) is recorded as interrupted" in said, said
    elif said.startswith("eval: interrupted between evaluations"):
        assert stopped == [] and tried, said
    else:  # ended on its own, or Ctrl-C came while the command was starting
        assert rc != 130 or said == STARTING, err
        assert stopped == [], stopped


@pytest.fixture(scope="module")
def long_run_original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed run of 400 steps, evaluated (about 2,400 events): seconds to verify and replay here."""
    root = tmp_path_factory.mktemp("long") / "runs"
    return record_run(root, "long", gbs=256, steps=400, evals=[(19, 0.72)], closed=True).path


@pytest.fixture
def long_run(long_run_original: Path, tmp_path: Path) -> Path:
    """A copy of the long run in a root of its own: each command derives (replay, the history) from scratch."""
    run = tmp_path / "runs" / long_run_original.name
    shutil.copytree(long_run_original, run, symlinks=True)
    return run


# At 0.3 s the signal lands early, mostly while `recorder` starts the command: the same code for every command,
# kept in the default tier by verify; every command keeps the moment inside its own work (1.5 s) there.


@pytest.mark.parametrize(
    ("command", "after_s"),
    [
        ("verify", 0.3),
        ("verify", 1.5),
        pytest.param("replay", 0.3, marks=pytest.mark.slow),
        ("replay", 1.5),
        pytest.param("query", 0.3, marks=pytest.mark.slow),
        ("query", 1.5),
        pytest.param("runs", 0.3, marks=pytest.mark.slow),
        ("runs", 1.5),
    ],
    ids=["verify-0.3", "verify-1.5", "replay-0.3", "replay-1.5", "query-0.3", "query-1.5", "runs-0.3", "runs-1.5"],
)
def test_ctrl_c_in_read_and_derive_commands(long_run: Path, command: str, after_s: float) -> None:
    args = {
        "verify": ["verify", str(long_run)],
        "replay": ["replay", str(long_run), "--compare"],
        "query": ["query", "--root", str(long_run.parent), "SELECT count(*) FROM events, steps"],
        "runs": ["runs", "--root", str(long_run.parent)],
    }[command]
    rc, out, err = _interrupt(args, after_s)
    _assert_safe(rc, out, err, command)
    _assert_runs_verify(long_run.parent)
    again = run_cli(*args)  # and the command still works afterwards
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.mark.parametrize("after_s", [0.3, 1.5])
def test_ctrl_c_during_import_leaves_only_whole_runs(corpus: Path, tmp_path: Path, after_s: float) -> None:
    folder = corpus / "mlperf-results/training_results_v5.1/AMD/results/MI355X_EPYC_9575F_pytorch/llama2_70b_lora"
    root = tmp_path / "runs"
    rc, out, err = _interrupt(["import", str(folder), "--root", str(root)], after_s)
    _assert_safe(rc, out, err, "import")
    _assert_runs_verify(root)
    imported = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    said = [x.split(" -> ")[1].split(":")[0] for x in out.splitlines() if " -> " in x]
    assert [Path(x).name for x in said] == imported  # every run left is one it reported whole


def test_ctrl_c_as_duckdb_reports_it_is_told_from_its_errors() -> None:
    import duckdb

    from recorder.cli.shared.interrupt import interrupted_in_duckdb

    assert interrupted_in_duckdb(RuntimeError("Query interrupted"))
    scan = "counting the rows of the object registered as '_live_events' failed: KeyboardInterrupt: "
    assert interrupted_in_duckdb(duckdb.InvalidInputException(f"Invalid Input Error: {scan}"))
    assert not interrupted_in_duckdb(duckdb.InvalidInputException("Invalid Input Error: a bad value"))
    assert not interrupted_in_duckdb(ValueError("KeyboardInterrupt"))  # not DuckDB's


@pytest.mark.parametrize("command", ["runs", "evals", "query"])
def test_a_query_interrupted_inside_a_command_is_said_as_that_commands_interruption(command: str) -> None:
    """The history's queries run in a worker thread (recorder.history.limits): Ctrl-C there ends the process
    at once, and the line names the command the user typed, not the query it ran."""
    from recorder.cli.shared.interrupt import KEPT, CommandInterrupted, interruptible
    from recorder.history.limits import QueryInterrupted

    def reads_the_history() -> None:
        raise QueryInterrupted("query: interrupted; nothing was changed (the history is read-only)")

    with pytest.raises(CommandInterrupted) as stopped:
        interruptible(command, reads_the_history)()
    assert str(stopped.value) == f"{command}: interrupted; {KEPT[command]}"
    assert "nothing was changed (the history is read-only" in str(stopped.value)
    assert stopped.value.exit_code == 130 and stopped.value.abandons_process


def test_a_commands_own_interruption_keeps_its_message() -> None:
    """train's and zero-shot's own lines (what was recorded, how to resume) pass through unchanged."""
    from recorder.cli.shared.interrupt import interruptible
    from recorder.cli.train import TrainInterrupted

    def stopped_training() -> None:
        raise TrainInterrupted("train: interrupted at step 3; resume with: recorder train --resume runs/r")

    with pytest.raises(TrainInterrupted) as stopped:
        interruptible("train", stopped_training)()
    assert str(stopped.value) == "train: interrupted at step 3; resume with: recorder train --resume runs/r"
