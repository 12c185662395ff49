"""A run's benchmark claim cannot be escaped by how its settings are spelled.

Each attack starts from the session's honest trained run: its trainer segment is rewritten (digests
recomputed) to evaluate otherwise, and then the run is evaluated by the real `recorder eval --all`, so every
evaluation is what the rewritten settings give. Every command that prints a verdict must then say NOT
COMPARABLE, or refuse the run by a named rule.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from recorder.rules import EVAL_TASK_SHA256
from recorder.verify import verify_run
from tests.cli.shell import run_main
from tests.helpers import run_cli
from tests.integrity.forge import Row, copy_run, first_event, in_trainer
from trainer.policy.taskspec import load_spec, shipped


def _evaluate_otherwise(events: list[Row], **settings: object) -> None:
    """config.eval and the run's own mllog lines, rewritten together to `settings` (so eval-config holds)."""
    opened = first_event(events, "run_opened")
    config = opened["data"]["config"]
    opened["data"]["config"] = {**config, "eval": {**config["eval"], **settings}}
    lines = {
        "eval_samples": "samples",
        "generation_validation_rollout_temperature": "temperature",
        "generation_validation_rollout_top_p": "top_p",
    }
    for e in events:
        if e["kind"] == "mllog_config" and lines.get(e["key"]) in settings:
            e["value"] = settings[lines[e["key"]]]


def _hotter_on_250(events: list[Row]) -> None:
    _evaluate_otherwise(events, samples=250, k=32, temperature=1.0)


def _attacked(trained_run: Path, tmp_path: Path, edit: object) -> Path:
    run = copy_run(trained_run, tmp_path, evaluations=False)
    in_trainer(edit)(run)  # type: ignore[arg-type]
    done = run_main("eval", str(run), "--all")  # in this process: the evaluations, not the process, are read
    if done.code == 1 and "[rule benchmark-eval]" in done.err:  # refused: evaluated past it
        done = run_main("eval", str(run), "--all", "--force")
    assert done.code == 0, done.out + done.err
    return run


def _verdicts(run: Path, tmp_path: Path) -> dict[str, str]:
    """What each verdict-printing command says of the run (stdout and stderr)."""
    out = {}
    for command in ("replay", "score", "evals"):
        done = run_cli(command, str(run))
        assert "Traceback" not in done.stderr, done.stderr
        out[command] = done.stdout + done.stderr
    report = tmp_path / "report.html"
    done = run_cli("report", str(run), "-o", str(report))
    assert "Traceback" not in done.stderr, done.stderr
    out["report"] = done.stdout + done.stderr + (report.read_text() if report.exists() else "")
    return out


def test_a_run_rewritten_to_sample_hotter_over_250_tasks_is_not_comparable_anywhere(
    trained_run: Path, tmp_path: Path
) -> None:
    run = _attacked(trained_run, tmp_path, _hotter_on_250)
    assert verify_run(run).ok  # consistent everywhere: an honest run could have been configured so
    for command, said in _verdicts(run, tmp_path).items():
        assert "NOT COMPARABLE" in said, (command, said)
        assert command == "score" or "samples 250, not 251" in said, (command, said)  # score: a mark per run
    replayed = run_cli("replay", str(run)).stdout
    assert "k 32, not 4" in replayed and "temperature 1.0, not 0.1" in replayed, replayed


@pytest.mark.slow  # evaluates the run again; the default tier keeps the 250-sample rewrite
def test_a_renamed_copy_of_the_task_spec_still_claims_the_benchmark(trained_run: Path, tmp_path: Path) -> None:
    """The copy has the shipped spec's bytes, so its sha256 is the benchmark's: the run claims the benchmark
    by what it scores, whatever the file is called, and pass@32 at temperature 1.0 breaks rule benchmark-eval."""
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    shipped_spec = shipped("addition")
    for f in shipped_spec.parent.glob("addition*"):
        shutil.copy(f, spec_dir / f.name)
    renamed = spec_dir / "sums.toml"
    (spec_dir / "addition.toml").rename(renamed)
    assert load_spec(renamed).sha256 == EVAL_TASK_SHA256

    def renamed_spec(events: list[Row]) -> None:
        first_event(events, "run_opened")["data"]["config"]["task"] = str(renamed)
        _evaluate_otherwise(events, task=str(renamed), k=32, temperature=1.0)

    run = _attacked(trained_run, tmp_path, renamed_spec)
    problems = verify_run(run).problems
    assert {p.rule for p in problems} == {"benchmark-eval"}, problems
    assert "k 32, not 4" in problems[0].message and "temperature 1.0, not 0.1" in problems[0].message
    for command, said in _verdicts(run, tmp_path).items():
        assert "benchmark-eval" in said or "NOT COMPARABLE" in said, (command, said)
