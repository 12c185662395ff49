"""A run is scored on the task it trained on, with the settings it recorded (run_opened config.eval):
`recorder eval` finds a spec run's spec, refuses one that changed or another given with --task, and takes
the spec the run recorded from wherever it now lies."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.errors import SettingsError
from evaluator.run_facts import check_recorded_task, read_facts, task_path
from recorder.verify.facts.eval_settings import RecordedEval
from tests.helpers import run_cli
from tests.trainer.specs import write_spec
from trainer.config import load_config
from trainer.policy.taskspec import shipped


def _recorded(spec: Path) -> tuple[dict, RecordedEval]:  # type: ignore[type-arg]
    config = load_config(sets=[f"task={spec}"]).to_dict()  # what `recorder train` records in run_opened
    recorded = RecordedEval.from_config(config)
    assert recorded is not None
    return config, recorded


def test_a_spec_run_is_scored_on_its_spec_and_refused_when_it_changed_or_went(tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    config, recorded = _recorded(spec)
    assert task_path(config, None) == spec.resolve()
    check_recorded_task(recorded, task_path(config, None), given=False)
    write_spec(tmp_path, answers_shift=2)
    with pytest.raises(SettingsError, match="plus-one.toml changed since the run recorded it"):
        check_recorded_task(recorded, task_path(config, None), given=False)
    spec.unlink()
    with pytest.raises(SettingsError, match="which is not there: pass --task with that spec"):
        check_recorded_task(recorded, task_path(config, None), given=False)


def test_the_spec_the_run_recorded_is_taken_from_wherever_it_now_lies(tmp_path: Path) -> None:
    then = tmp_path / "then"
    then.mkdir()
    config, recorded = _recorded(write_spec(then))
    moved = write_spec(tmp_path)  # the same bytes, another folder
    shutil.rmtree(then)
    assert task_path(config, moved) == moved
    check_recorded_task(recorded, moved, given=True)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(SettingsError, match=r"--task .*: not the task spec the run trained on and recorded"):
        check_recorded_task(recorded, write_spec(other, answers_shift=3), given=True)


def _copy(trained_run: Path, tmp_path: Path) -> Path:
    run = tmp_path / Path(trained_run).name
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns("derived", "evaluator-*"))
    return run


def test_eval_of_a_default_run_with_another_spec_is_refused_and_records_nothing(
    trained_run: Path, tmp_path: Path
) -> None:
    run = _copy(trained_run, tmp_path)
    before = sorted(p.name for p in (run / "events").iterdir())
    done = run_cli("eval", str(run), "--task", str(write_spec(tmp_path)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: --task ") and "Traceback" not in done.stderr
    assert "not the task spec the run trained on and recorded (the built-in addition task" in done.stderr
    assert sorted(p.name for p in (run / "events").iterdir()) == before


def test_a_copy_of_the_shipped_addition_spec_scores_a_default_run_with_its_recorded_settings(
    trained_run: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "spec"
    shutil.copytree(shipped("addition").parent, copy)
    facts = read_facts(_copy(trained_run, tmp_path), allow_gaps=False, task=copy / "addition.toml")
    assert facts.task == copy / "addition.toml"
    assert (facts.eval_cfg.k, facts.eval_cfg.samples, facts.eval_cfg.target) == (4, 251, 0.69)
