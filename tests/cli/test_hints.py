"""Every hint the command line gives works when a user follows it, and the docs say what the tool does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.cli.shell import run_main
from tests.helpers import REPO, run_cli
from tests.kit.synthetic import record_run


def test_the_torchrun_line_in_train_help_starts_the_recorder() -> None:
    done = run_cli("train", "--help")
    flat = " ".join(done.stdout.split())
    found = re.search(r"torchrun --nproc-per-node N -m (\S+) train", flat)
    assert found, flat
    module = found.group(1)
    # what torchrun runs: `python -m MODULE train --help`; it must be the recorder's own command line
    ran = subprocess.run(
        [sys.executable, "-m", module, "train", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert ran.returncode == 0 and "Train with GRPO" in ran.stdout, ran.stderr


def test_a_config_directory_is_named_as_one_with_what_to_pass(tmp_path: Path) -> None:
    (tmp_path / "train.toml").write_text("max_steps = 20\n")
    done = run_cli("train", "--config", str(tmp_path), "--root", str(tmp_path / "runs"))
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert "a directory; --config takes a TOML or JSON settings file (found there: train.toml)" in said
    assert "no such file" not in said and "train: starting" not in said  # nothing starts for a bad config
    followed = run_cli("train", "--config", str(tmp_path / "train.toml"), "--list-settings")
    assert followed.returncode == 0


def test_a_validation_error_comes_without_the_start_line(tmp_path: Path) -> None:
    done = run_cli("train", "--set", "max_steps=-1", "--root", str(tmp_path / "runs"))
    assert done.returncode == 2 and "max_steps" in done.stderr
    assert "train: starting" not in done.stderr and "warm-up" not in done.stderr
    assert not (tmp_path / "runs").exists()


def test_query_runs_the_statements_its_help_names_and_refuses_the_rest(tmp_path: Path) -> None:
    record_run(tmp_path / "runs", "q", gbs=256, steps=20, closed=True)
    root = str(tmp_path / "runs")
    help_text = " ".join(run_main("query", "--help").out.split())
    for statement in ("SELECT", "EXPLAIN", "PIVOT", "DESCRIBE", "SHOW", "SUMMARIZE"):
        assert statement in help_text, help_text
    described = run_main("query", "--root", root, "DESCRIBE runs", "--format", "json")
    assert described.code == 0 and "pass_target" in described.out, described.err
    refused = run_main("query", "--root", root, "CREATE TABLE t AS SELECT 1")
    assert refused.code == 2 and "read-only (SELECT, EXPLAIN, PIVOT, DESCRIBE, SHOW, SUMMARIZE)" in refused.err


def test_a_non_file_in_events_is_named_and_skipped_as_documented(tmp_path: Path) -> None:
    run = record_run(tmp_path / "runs", "n", gbs=256, steps=20, closed=True).path
    (run / "events" / "notes").mkdir()
    os.mkfifo(run / "events" / "pipe.arrows")
    done = run_cli("verify", str(run))
    assert done.returncode == 0 and "verify: intact" in done.stdout, done.stdout
    assert "events/notes: a directory" in done.stderr and "events/pipe.arrows: a FIFO" in done.stderr  # warnings
    assert "skipped" in done.stderr and "ALTERED" not in done.stdout + done.stderr
    (run / "events" / "notes.txt").write_text("a regular file is someone's edit\n")
    assert run_cli("verify", str(run)).returncode == 1


def test_check_submission_says_what_the_rcp_checker_found(corpus: Path, tmp_path: Path) -> None:
    from replay.checkers.package_check import explained

    said = explained("[result_0] RCP Test Failed: RCP found")
    assert said.startswith("RCP test failed: the reference convergence points (RCPs)")
    assert "converge in fewer epochs than they allow" in said and "RCP Test Failed: RCP found" in said
    assert explained("some other error") == "some other error"
    assert "must be submitted" in explained("RCP Test Failed: Missing RCP, please submit RCP with BS = 8")


def test_the_stale_note_names_the_command_that_refreshes_the_cache(tmp_path: Path) -> None:
    from tests.kit.synthetic import record_evals

    run = record_run(tmp_path / "runs", "s", gbs=256, steps=20, closed=True)
    run_main("score", str(run.path))
    record_evals(run, [(19, 0.72)], gbs=256, start_s=1500, each_s=60)
    note = next(x for x in run_main("verify", str(run.path)).err.splitlines() if "stale" in x)  # a warning
    command = re.search(r"`(recorder replay [^`]+)`", note)
    assert command, note
    assert run_main(*command.group(1).split()[1:]).code == 0  # follow it
    after = run_main("verify", str(run.path))
    assert after.code == 0 and "stale" not in after.out + after.err
    state = json.loads((run.derived / "state.json").read_text())
    assert set(state["derived"]["scores.jsonl"]["events"]) == {"trainer-0001.arrows", "evaluator-0001.arrows"}


def test_interrupt_hints_name_commands_that_exist() -> None:
    from recorder.cli.shared.interrupt import KEPT

    for text in KEPT.values():
        for named in re.findall(r"`recorder ([a-z-]+)", text):
            assert run_cli(named, "--help").returncode == 0, named
