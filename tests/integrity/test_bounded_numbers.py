"""Every number a zero-shot verdict rests on is checked where it enters, before anything is loaded: the holdout
tolerance (finite, 0 to its ceiling), the logged loss (finite, at least 0), the holdout settings (whole numbers
in their ranges), a capacity switch's name; and `collect` names a result held to a wider tolerance, and skips
one whose tolerance lets anything through, even signed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.holdout_check.reference import logged_loss
from evaluator.zero_shot.options import MAX_GAP_CEILING, ZeroShotOptions
from evaluator.zero_shot.origin.declaration import Declaration
from evaluator.zero_shot.origin.team_config import TeamConfig, team_holdout_plan
from evaluator.zero_shot.reporting.outputs import write_outputs
from recorder.checkpoints.capacity_switch import switch_of
from recorder.signing import SIGNING_KEY_ENV
from tests.helpers import run_cli
from tests.zero_shot.test_bound_results import _document, _rows, keys
from trainer.policy.errors import ModelCodeError

__all__ = ["keys"]  # the fixture: alice's and mallory's key pairs


@pytest.mark.parametrize("gap", [math.nan, math.inf, -math.inf, 1e300, MAX_GAP_CEILING * 2, -0.001])
def test_a_holdout_tolerance_outside_its_range_is_refused(gap: float) -> None:
    with pytest.raises(ZeroShotInputError, match=r"--holdout-max-gap .*: a finite gap from 0 to 0.1"):
        ZeroShotOptions(max_gap=gap)
    assert ZeroShotOptions(max_gap=MAX_GAP_CEILING).max_gap == MAX_GAP_CEILING


@pytest.mark.parametrize(("option", "env"), [(["--holdout-max-gap", "nan"], {}), ([], {"EVAL_HOLDOUT_MAX_GAP": "inf"})])
def test_the_command_refuses_a_nan_or_inf_tolerance_before_it_reads_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: list[str], env: dict[str, str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    done = run_cli("zero-shot", str(tmp_path / "no-such-checkpoint"), "--data-dir", str(tmp_path), *option)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "--holdout-max-gap" in errors[0] and "no-such-checkpoint" not in done.stderr, done.stderr


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-1.5", "true"])
def test_a_logged_loss_that_is_no_loss_is_refused_naming_the_file_and_step(tmp_path: Path, value: str) -> None:
    scalars = tmp_path / "tensorboard_scalars.json"
    scalars.write_text('{"eval/loss": [{"step": 10, "value": 3.5}, {"step": 20, "value": ' + value + "}]}")
    with pytest.raises(ZeroShotInputError, match=r"tensorboard_scalars.json: eval/loss at step 20 is .*not a finite"):
        logged_loss(tmp_path, 20)


def _team(tmp_path: Path, **holdout: object) -> TeamConfig:
    (tmp_path / "val.txt").write_text("one document\nanother one\n")
    config = {
        "data": {"val_path": "val.txt", "block_size": 8},
        "eval": {"tokens": 64, "batch_rows": 2},
        "train": {"param_dtype": "fp32"},
    }
    declaration = Declaration(file=tmp_path / "pyproject.toml", holdout={"seq_len": "data.block_size", **holdout})
    return TeamConfig(directory=tmp_path, config=config, metadata={}, bases=(tmp_path,), declaration=declaration)


@pytest.mark.parametrize(
    ("name", "value"),
    [("seq_len", 0), ("batch_rows", -1), ("seq_len", math.inf), ("tokens", 64.5), ("batch_rows", True)],
)
def test_a_holdout_setting_outside_its_range_is_refused_naming_its_source(
    tmp_path: Path, name: str, value: object
) -> None:
    team = _team(tmp_path)
    key = {"seq_len": "data.block_size", "tokens": "eval.tokens", "batch_rows": "eval.batch_rows"}[name]
    section, leaf = key.split(".")
    team.config[section][leaf] = value
    with pytest.raises(ZeroShotInputError, match=rf"all_config.yaml {key}: holdout {name} .* is not a whole number"):
        team_holdout_plan(team, world_size=2, data=None, hook=None)


def test_an_infinite_block_size_read_from_yaml_is_refused(tmp_path: Path) -> None:
    import yaml

    team = _team(tmp_path)
    team.config["data"]["block_size"] = yaml.safe_load("block_size: .inf")["block_size"]
    with pytest.raises(ZeroShotInputError, match=r"holdout seq_len inf is not a whole number from 1 to"):
        team_holdout_plan(team, world_size=2, data=None, hook=None)
    team.config["data"]["block_size"] = 8
    assert team_holdout_plan(team, world_size=2, data=None, hook=None).seq_len == 8  # the honest value passes


@pytest.mark.parametrize("spec", [{"method": "__init__"}, {"attribute": "_parameters"}, {"argument": "not a name"}])
def test_a_capacity_switch_that_is_no_public_name_is_refused(spec: dict[str, str]) -> None:
    with pytest.raises(ModelCodeError, match="a public name"):
        switch_of(spec, "pyproject.toml [tool.recorder] capacity")
    assert switch_of({"method": "set_capacity"}, "here").name == "set_capacity"


def _holdout(max_gap: float) -> dict[str, object]:
    return {
        "mode": "on", "recomputed": 3.1, "logged": 3.0, "gap": 0.1, "max_gap": max_gap, "passed": True,
        "step": 20, "source": "tensorboard_scalars.json",
    }  # fmt: skip


def test_collect_skips_a_signed_result_whose_tolerance_passes_anything_and_names_a_wider_one(
    tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = tmp_path / "fsdp2_epoch_2"
    checkpoint.mkdir()
    (checkpoint / "__0_0.distcp").write_bytes(b"\0" * 64)
    out = tmp_path / "out"
    monkeypatch.setenv(SIGNING_KEY_ENV, str(keys / "alice"))
    for i, gap in enumerate([1e300, 0.1]):
        doc = _document(checkpoint, 0.5, f"2026-01-0{i + 1}T00:00:00+00:00")
        object.__setattr__(doc, "holdout", _holdout(gap))
        write_outputs(out / f"tiny_{i}", doc, "", "")
    monkeypatch.delenv(SIGNING_KEY_ENV)
    assert json.loads((out / "tiny_0" / "results.json").read_text())["holdout"]["max_gap"] == 1e300
    done = run_cli("collect", str(out), "--trust", str(keys / "alice.pub"), "--all")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert f"skipped {out / 'tiny_0' / 'results.json'}: holdout max_gap 1e+300 is outside 0 to 0.1" in said, said
    [row] = _rows(done.stdout)
    assert "holdout gap 0.1" in row, done.stdout


def test_a_holdout_function_that_returns_the_logged_loss_is_caught_by_the_recomputation() -> None:
    """A declared holdout_function is the team's word: one that returns the logged loss whatever the weights
    would pass any checkpoint, so its value must agree with the project's own recomputation of the same
    weights over the same data, packing and numerics."""
    from evaluator.zero_shot.errors import HoldoutMismatch
    from evaluator.zero_shot.job import cross_checked

    logged, foreign_weights = 3.2512, 3.9087
    with pytest.raises(HoldoutMismatch, match=r"returned eval/loss 3.251200, but the recomputation .* gives 3.908700"):
        cross_checked(logged, foreign_weights, "utils.eval_loss:holdout_loss", 0.005)
    for value in (math.nan, "3.25", None):
        with pytest.raises(HoldoutMismatch, match="not a finite loss"):
            cross_checked(value, foreign_weights, "utils.eval_loss:holdout_loss", 0.005)
    assert cross_checked(3.2530, 3.2512, "utils.eval_loss:holdout_loss", 0.005) == 3.2530  # honest: agrees
