"""An accuracy exactly at the target (0.69): `replay --compare --check` decides it in the official row as the
rule and the real mlperf-logging checker do (it does not pass), and shows NeMo-RL's `>=` in its own row,
`nemo-rl-ge`, which passes it and whose log the checker fails. `ge-threshold`, that row's earlier name, is
still accepted by `--interpretation` and derives under the new one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.kit.synthetic import record_run


@pytest.fixture()
def exact(tmp_path: Path) -> Path:
    """Closed division, GBS 256: step 18 (the validation start) scores exactly the target, step 19 above it."""
    return record_run(tmp_path, "exact", gbs=256, steps=20, evals=[(18, 0.69), (19, 0.72)], closed=True).path


def test_the_official_row_decides_an_accuracy_at_the_target_as_the_checker_does(exact: Path) -> None:
    done = run_cli("replay", str(exact), "--ruleset", "6.1.0", "--compare", "--check", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["interpretation"]: r for r in json.loads(done.stdout)["interpretations"]}
    assert "ge-threshold" not in rows
    official, nemo = rows["official"], rows["nemo-rl-ge"]
    assert (official["status"], official["passing_step"]) == ("success", 19)
    assert official["checker"].endswith(": PASSED"), official["checker"]
    assert (nemo["status"], nemo["passing_step"]) == ("success", 18)
    assert "FAILED" in nemo["checker"] and "v['value'] > s['target_accuracy']" in nemo["checker"], nemo["checker"]


def test_the_table_names_the_ge_row_after_nemo_rl(exact: Path) -> None:
    done = run_cli("replay", str(exact), "--ruleset", "6.1.0", "--compare")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.strip("│ ").split(" ", 1)[0] for line in done.stdout.splitlines() if line.startswith("│ ")]
    assert "nemo-rl-ge" in rows and "ge-threshold" not in rows, done.stdout


def test_the_earlier_name_is_accepted_and_derives_under_the_new_one(exact: Path) -> None:
    done = run_cli("replay", str(exact), "--ruleset", "6.1.0", "--interpretation", "ge-threshold")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("nemo-rl-ge: success, passing step 18,"), done.stdout
    derived = exact / "derived"
    assert (derived / "result_nemo-rl-ge.txt").is_file() and not list(derived.glob("result_ge-threshold*"))
