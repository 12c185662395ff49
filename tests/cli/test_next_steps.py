"""Every `next:` a command prints is one command that runs: after `import-checkpoints` (with and without
--task) the printed `recorder eval` is run as printed and does its work, and replay's hint names the same."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from tests.evaluator import nemo_run
from tests.helpers import run_cli
from tests.kit import mcore_golden, sample_series
from trainer.policy.taskspec import shipped

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def series(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("series") / "checkpoints"
    return sample_series.write_series(root, {s: nemo_run.update_ms(s) for s in (18, 19)})


@pytest.fixture(scope="module")
def small_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped next-number task scored on its first 16 tasks: the printed eval runs the same way on fewer."""
    folder = tmp_path_factory.mktemp("spec")
    shipped_spec = shipped("next-number")
    for name in ("next-number-dev.jsonl", "next-number.jsonl"):
        shutil.copyfile(shipped_spec.parent / name, folder / name)
    text = shipped_spec.read_text()
    assert "\nsamples = 251\n" in text
    (folder / "next-number.toml").write_text(text.replace("\nsamples = 251\n", "\nsamples = 16\n"))
    return folder / "next-number.toml"


def _next(stdout: str) -> list[str]:
    (line,) = [x for x in stdout.splitlines() if "next: " in x]
    return shlex.split(line.split("next: ", 1)[1])


def _runs_as_printed(argv: list[str]) -> str:
    assert argv[0] == "recorder", argv
    done = run_cli(*argv[1:], timeout=600)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: the data says no (this model fails)
    assert "evaluated with local" in done.stdout, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow  # the default tier keeps the no-task case
def test_import_checkpoints_with_a_task_names_the_eval_that_works(series: Path, tmp_path: Path) -> None:
    spec = shipped("next-number")
    done = run_cli("import-checkpoints", str(series), "--into", str(tmp_path / "runs" / "nemo"), "--task", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    argv = _next(done.stdout)
    assert argv == ["recorder", "eval", str(tmp_path / "runs" / "nemo"), "--task", str(spec)]
    _runs_as_printed(argv)


def test_without_a_task_it_names_the_eval_and_what_its_spec_is(series: Path, tmp_path: Path, small_spec: Path) -> None:
    run = tmp_path / "runs" / "plain"
    done = run_cli("import-checkpoints", str(series), "--into", str(run))
    assert done.returncode == 0, done.stdout + done.stderr
    argv = _next(done.stdout)
    assert argv == ["recorder", "eval", str(run), "--task", "SPEC.toml"]
    assert "SPEC.toml: the task spec it trained on" in done.stdout
    replay = run_cli("replay", str(run))
    assert replay.returncode == 1 and f"evaluate them: recorder eval {run} --task SPEC.toml" in replay.stderr
    _runs_as_printed([str(small_spec) if a == "SPEC.toml" else a for a in argv])


def test_a_series_that_needed_a_model_config_names_it_in_the_eval_that_works(tmp_path: Path, small_spec: Path) -> None:
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")  # holds no config.json, no tokenizer
    config, tokenizer = mcore_golden.model_config("dense-tp1"), mcore_golden.tokenizer()
    spec = small_spec
    run = tmp_path / "runs" / "nemo"
    done = run_cli(
        "import-checkpoints", str(series), "--into", str(run), "--task", str(spec),
        "--model-config", str(config), "--tokenizer", str(tokenizer), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    argv = _next(done.stdout)
    assert argv == [
        "recorder", "eval", str(run), "--task", str(spec), "--model-config", str(config), "--tokenizer", str(tokenizer),
    ]  # fmt: skip
    _runs_as_printed(argv)
