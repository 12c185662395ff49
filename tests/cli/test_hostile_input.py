"""The shell around the data, each attack reproduced: markup in user data, long values, entries of events/
that are not files, queries without limits, concurrent compaction and run ids."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recorder.history.lock import LOCK_NAME
from recorder.store.log import LogWriter
from recorder.store.run import RUN_ID_RULE, RunDir
from tests.cli.shell import make_root, run_main, run_process
from tests.kit.synthetic import record_worked_example


def _hostile_log(corpus: Path, tmp_path: Path) -> Path:
    """A real mllog whose benchmark name is rich markup (a closing tag with no opening one, then a style)."""
    text = (corpus / "qwen35_397b_grpo_rcp/GBS256/seed_1.out").read_text()
    hostile = text.replace('"value": "qwen35_397b_grpo"', '"value": "[/x][red]x"', 1)
    assert hostile != text
    log = tmp_path / "hostile.out"
    log.write_text(hostile)
    return log


def test_markup_in_user_data_prints_literally(tmp_path: Path, corpus: Path) -> None:
    root = tmp_path / "runs"
    assert run_main("import", str(_hostile_log(corpus, tmp_path)), "--root", str(root), "--run-id", "m").code == 0
    for args in (
        ["runs", "--root", str(root)],
        ["query", "--root", str(root), "SELECT benchmark FROM runs"],
        ["events", str(root / "m"), "--kind", "run_opened"],
    ):
        r = run_main(*args)
        assert r.code == 0, (args, r.err)
        assert "[/x][red]x" in r.out, (args, r.out)


def test_a_long_value_is_cut_in_the_table_and_whole_in_json(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "long")
    with LogWriter(run, "trainer") as w:
        w.append("mllog_config", key="submission_platform", value="x" * 5_000_000)
    r = run_main("events", str(run.path))
    assert r.code == 0, r.err
    assert "more characters" in r.out
    assert max(len(line) for line in r.out.splitlines()) < 20_000
    r = run_main("events", str(run.path), "--format", "json")
    assert "x" * 5_000_000 in r.out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_entries_of_events_that_are_not_files_are_named_and_skipped(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    run = record_worked_example(root, "w")
    (run.events / "x.arrows").mkdir()
    os.mkfifo(run.events / "fifo-0001.arrows")  # opening it for reading would block forever
    (run.events / "zero-0001.arrows").symlink_to("/dev/zero")  # reading it would never end
    for args, code in (
        (["verify", str(run.path)], 0),  # named and skipped: none of them is part of the run
        (["replay", str(run.path)], 1),  # named, then: the worked example's last steps are not evaluated
        (["runs", "--root", str(root)], 0),
        (["query", "--root", str(root), "SELECT count(*) FROM events"], 0),
        (["events", str(run.path), "--kind", "run_start"], 0),
        (["compact", "--root", str(root)], 0),  # last: the views then read its pack, not events/
    ):
        r = run_process(*args, timeout=120)  # a FIFO opened blocking would hang here
        assert r.code == code, (args, r.out, r.err)
        assert "Traceback" not in r.out + r.err
        said = r.out + r.err
        for name in ("x.arrows", "fifo-0001.arrows", "zero-0001.arrows"):
            assert name in said or args[0] == "compact", (args, said)
        if args[0] == "verify":  # its warnings go to stderr
            assert "a FIFO" in r.err and "a directory" in r.err and "a symlink" in r.err, r.err


def test_query_timeout_interrupts_duckdb_and_spills_nowhere_visible(tmp_path: Path) -> None:
    root = make_root(tmp_path / "runs")
    cwd = tmp_path / "here"
    cwd.mkdir()
    start = time.monotonic()
    r = run_process(
        "query",
        "--root",
        str(root),
        "--timeout",
        "2",
        "SELECT count(DISTINCT range) FROM range(1000000000000)",
        cwd=cwd,
    )
    assert r.code == 2, r.err
    assert "stopped after 2 s (--timeout)" in r.err and "Traceback" not in r.err
    assert time.monotonic() - start < 120  # the query alone would run for hours
    assert list(cwd.iterdir()) == []  # DuckDB's spill files go to a private temporary folder


def _has_loaded(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text(errors="replace")
    except OSError:  # the process has just ended
        return False


def test_ctrl_c_stops_a_query(tmp_path: Path) -> None:
    root = make_root(tmp_path / "runs")
    exe = Path(sys.executable).parent / "recorder"
    p = subprocess.Popen(
        [
            str(exe),
            "query",
            "--root",
            str(root),
            "--timeout",
            "0",
            "SELECT count(DISTINCT range) FROM range(1000000000000)",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's Ctrl-C finds it
    )
    # Ctrl-C once the command runs (DuckDB loaded: the query is starting or running), however slow the
    # machine is to start Python: a signal during the interpreter's own start-up is not the CLI's to handle.
    for _ in range(1200):
        if p.poll() is not None or _has_loaded(p.pid, "duckdb"):
            break
        time.sleep(0.05)
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in out + err


def test_pivot_is_a_read(tmp_path: Path) -> None:
    root = make_root(tmp_path / "runs")
    r = run_main("query", "--root", str(root), "PIVOT steps ON run_id USING first(reward)", "--format", "csv")
    assert r.code == 0, r.err
    assert [c.strip('"') for c in r.out.splitlines()[0].split(",")[-2:]] == ["killed", "worked"]
    refused = run_main("query", "--root", str(root), "PIVOT steps ON run_id USING first(reward); DROP VIEW steps")
    assert refused.code == 2


def test_a_second_compact_waits_for_the_first(tmp_path: Path) -> None:
    root = make_root(tmp_path / "runs")
    lock = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)  # a first compaction in progress
    exe = Path(sys.executable).parent / "recorder"
    said = tmp_path / "stderr.txt"
    with said.open("w") as stderr:
        p = subprocess.Popen(
            [str(exe), "compact", "--root", str(root), "--no-scores"], stdout=subprocess.PIPE, stderr=stderr, text=True
        )
    try:
        deadline = time.monotonic() + 120
        while "waiting for another" not in said.read_text() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "waiting for another `recorder compact`" in said.read_text()
        assert p.poll() is None, "compact ran while another held the lock"
        assert not (root / "worked" / "derived" / "events.parquet").exists()
    finally:
        os.close(lock)  # the first one finishes
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, said.read_text()
    assert "worked: compacted" in out


@pytest.mark.parametrize("run_id", ["a\nb", "a b", "$(id)", "r" * 300, "../x", ".hidden", "-x"])
def test_run_ids_follow_one_rule_everywhere(tmp_path: Path, corpus: Path, run_id: str) -> None:
    log = corpus / "qwen35_397b_grpo_rcp/GBS256/seed_1.out"
    for args in (
        ["import", str(log), "--root", str(tmp_path), "--run-id", run_id],
        ["train", "--root", str(tmp_path), "--run-id", run_id],
        ["import-checkpoints", str(tmp_path), "--into", f"{tmp_path}/{run_id}"],
    ):
        if args[0] == "import-checkpoints" and "/" in run_id:
            continue  # --into is a path: its last part is the id
        r = run_main(*args)
        assert r.code == 2, (args, r.err)
        assert RUN_ID_RULE in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_run_killed_before_its_first_checkpoint_has_no_minutes(tmp_path: Path) -> None:
    root = make_root(tmp_path / "runs")
    r = run_main("replay", str(root / "killed"))
    assert r.code == 1
    assert "no checkpoint" in r.err and "minutes" not in r.out
    rows = run_main(
        "query", "--root", str(root), "SELECT run_id, status, minutes FROM runs ORDER BY run_id", "--format", "json"
    )
    assert rows.out.splitlines()[0] == '{"run_id": "killed", "status": "no checkpoint", "minutes": null}'
    table = run_main("runs", "--root", str(root))
    killed = next(line for line in table.out.splitlines() if " killed " in line)
    assert "no checkpoint" in killed


def test_version() -> None:
    r = run_main("--version")
    assert r.code == 0 and r.out.startswith("recorder 0.")


def test_ctrl_c_inside_a_duckdb_statement_of_the_main_thread_is_an_interrupt_not_a_traceback(tmp_path: Path) -> None:
    """DuckDB turns a SIGINT that lands inside a main-thread statement (the history's views being opened)
    into RuntimeError('Query interrupted'): the command still says it was interrupted, exit 130."""
    import threading

    import duckdb

    from recorder.cli.shared.interrupt import CommandInterrupted, interruptible

    # A streaming sum: no memory to spill, and hours of work, so the SIGINT lands inside it. A fallback
    # interrupt after 30 s ends it if the signal did not reach it (DuckDB then reports the same error, so what
    # is checked is the mapping of DuckDB's own report of an interrupted statement, not that SIGINT reached it).
    con = duckdb.connect(config={"temp_directory": str(tmp_path), "max_temp_directory_size": "1MB"})

    fallback = threading.Timer(30, con.interrupt)
    # The signal is sent once the statement is under way: one sent while the main thread is still on its way
    # into DuckDB (a loaded machine) is only noted by Python, and the statement then runs until the fallback.
    starting = threading.Event()

    def ctrl_c_once_running() -> None:
        starting.wait()
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGINT)

    def opening_views() -> None:
        threading.Thread(target=ctrl_c_once_running, daemon=True).start()
        fallback.start()
        starting.set()
        con.execute("SELECT sum(range) FROM range(1000000000000)")

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a command's process has it
    try:
        with pytest.raises(CommandInterrupted) as stopped:
            interruptible("query", opening_views)()
    finally:
        fallback.cancel()
        signal.signal(signal.SIGINT, previous)
    assert stopped.value.exit_code == 130 and str(stopped.value).startswith("query: interrupted; ")

    def failing() -> None:
        raise RuntimeError("Query interrupted by something else")

    with pytest.raises(RuntimeError):  # any other RuntimeError is left as it is
        interruptible("query", failing)()
