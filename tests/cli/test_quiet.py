"""Noise on stderr (recorder/cli/terminal/quiet.py): a command prints what is about the user's run, not the chatter of
the libraries it calls. tests/evaluator/test_nemo_end_to_end.py holds transformers' progress bars off in the
default tier; this holds Ray's banner off a two-worker evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.evaluator.synth import record_run
from tests.evaluator.test_nemo_end_to_end import assert_quiet
from tests.helpers import run_cli


@pytest.mark.slow  # a local Ray cluster and two actors that import torch: 30 s to 100 s on 2 loaded cores
def test_two_ray_workers_print_no_ray_banner(tmp_path: Path) -> None:
    run = record_run(tmp_path, run_id="quiet", steps=19, target=0.5, samples=2).path
    done = run_cli("eval", str(run), "--workers", "2", "--all")
    assert "with ray:2" in done.stdout, done.stdout + done.stderr  # the two workers really ran
    assert_quiet(done.stderr)
    # what stays on stderr is ours: here the one-line verdict on a random model that passes nothing
    assert [x for x in done.stderr.splitlines() if not x.startswith("error: ")] == [], done.stderr
