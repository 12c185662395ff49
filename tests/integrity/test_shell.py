"""The shell around the data cannot be turned against its user."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorder.adapters.nemo import import_checkpoints
from recorder.errors import InputError
from tests.helpers import run_cli


def _nemo_step(root: Path, step: int, info: dict[str, object], config: str) -> Path:
    d = root / f"step_{step}"
    (d / "policy" / "weights").mkdir(parents=True)
    (d / "policy" / "weights" / "w.bin").write_bytes(b"\0" * 16)
    (d / "policy" / "weights" / "config.json").write_text("{}")  # Hugging Face weights: a finished save
    (d / "training_info.json").write_text(json.dumps(info))
    (d / "config.yaml").write_text(config)
    return d


CONFIG = "grpo:\n  num_prompts_per_step: 16\n  num_generations_per_prompt: 16\n"


def test_8_yaml_aliases_are_refused_before_any_event(tmp_path: Path) -> None:
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b]\n'
    info = {"current_step": 18, "consumed_samples": 288, "training_step_end_time_ms": 1_780_000_000_000}
    _nemo_step(tmp_path / "series", 18, info, CONFIG + bomb)
    done = run_cli("import-checkpoints", str(tmp_path / "series"), "--into", str(tmp_path / "runs" / "r"))
    assert done.returncode == 2 and "YAML anchor &a refused" in done.stderr and "line 4" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize("key", ["current_step", "consumed_samples", "training_step_end_time_ms"])
def test_14_nemo_values_above_int64_are_refused_before_any_event(tmp_path: Path, key: str) -> None:
    info: dict[str, object] = {
        "current_step": 18,
        "consumed_samples": 288,
        "training_step_end_time_ms": 1_780_000_000_000,
    }
    info[key] = 2**64
    _nemo_step(tmp_path / "series", 18, info, CONFIG)
    with pytest.raises(InputError, match=key):
        import_checkpoints(tmp_path / "series", tmp_path / "runs" / "r")
    assert not (tmp_path / "runs" / "r").exists()  # no run with only run_opened


def test_7_writes_under_derived_refuse_symlinks_out_of_the_run(evaluated_run: Path, tmp_path: Path) -> None:
    from tests.integrity.forge import copy_run

    run = copy_run(evaluated_run, tmp_path / "copy")
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("precious\n")
    (run / "derived" / "result_official.txt").symlink_to(victim)
    done = run_cli("replay", str(run))
    assert "Traceback" not in done.stderr
    assert victim.read_text() == "precious\n"  # the link was replaced, the target never written
    for target in (outside,):
        moved = run / "derived"
        import shutil

        shutil.rmtree(moved)
        moved.symlink_to(target)
        for args in (("replay", str(run)), ("compact", "--root", str(run.parent)), ("eval", str(run), "--all")):
            done = run_cli(*args)
            assert done.returncode in (1, 2) and "Traceback" not in done.stderr, (args, done.stderr)
        assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"] and victim.read_text() == "precious\n"


def test_9_an_absurd_config_json_is_refused_before_any_allocation(evaluated_run: Path, tmp_path: Path) -> None:
    from tests.integrity.forge import copy_run, edit_json

    attacked = copy_run(evaluated_run, tmp_path, evaluations=False)
    edit_json(attacked / "checkpoints" / "step_0000018" / "config.json", num_hidden_layers=100000)
    # The commit hashes config.json, so verify refuses the run before anything is loaded ...
    refused = run_cli("eval", str(attacked), "--order", "18", "--all")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stdout + refused.stderr
    assert "config.json is missing or not the committed one [rule commit-files]" in refused.stderr
    # ... and under --force the weights' own header still refuses it before any allocation.
    done = run_cli("eval", str(attacked), "--order", "18", "--all", "--force")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "implies 26,240,004,992 parameters" in done.stdout and "stores 792,192" in done.stdout
    from recorder.verify import verify_run

    report = verify_run(attacked)  # the evaluator's segment was closed: nothing left open
    assert [p.rule for p in report.problems] == ["commit-files"], report.problems
    assert all(s.closed for s in report.segments)
