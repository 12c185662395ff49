"""A Ray that cannot start is one `error:` line naming the cause and the ways out (--workers 1,
--ray-address), exit 2, and no traceback: for `recorder zero-shot` with several workers and for `recorder
eval --workers N`, said before Ray is started when the paths alone show it cannot start (a temp dir that cannot
be made, or one whose path has a space: Ray's node would never come up, and Ray would say only that it timed out
during startup, a minute later), and leaving the run as it was."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from evaluator.harness.taskset import SHIPPED_DATA
from tests.fixtures import team_tree
from tests.helpers import RECORDER

pytest.importorskip("ray")
pytest.importorskip("torch")

FACTORY = "models.moe:build_model"


def _cli(args: list[str], ray_tmpdir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"RAY_TMPDIR": str(ray_tmpdir)}
    return subprocess.run([RECORDER, *args], capture_output=True, text=True, env=env, timeout=600)


def _zero_shot(team: Path) -> list[str]:
    archives = [str(team / "archive/ckpt_E1"), str(team / "archive/ckpt_E2")]
    return [
        "zero-shot", *archives, "--model-code", str(team), "--model-factory", FACTORY, "--tasks", "piqa",
        "--limit", "2", "--data-dir", str(SHIPPED_DATA), "--holdout", "off", "--workers", "2",
    ]  # fmt: skip


def _one_error_line(done: subprocess.CompletedProcess[str], cause: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith("error: Ray could not start a local cluster: ") and cause in line, line
    assert "--workers 1" in line and "--ray-address" in line, line


def test_zero_shot_on_workers_with_a_temp_dir_ray_cannot_use(tmp_path: Path) -> None:
    team = team_tree.copy(tmp_path / "team")
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory\n")
    done = _cli(_zero_shot(team), blocked / "ray")
    _one_error_line(done, f"{blocked / 'ray'}: ")
    assert not list(team.glob("archive/*/eval_results")), "nothing is written"


@pytest.mark.slow
def test_eval_on_workers_with_a_temp_dir_ray_cannot_use(tmp_path: Path) -> None:
    from tests.evaluator.test_nemo_end_to_end import import_nemo_run
    from tests.kit import sample_series
    from trainer.policy.taskspec import shipped

    series = sample_series.write_series(tmp_path / "checkpoints", {s: sample_series.update_ms(s) for s in (18, 19)})
    spec = shipped("next-number")
    run = import_nemo_run(tmp_path, series, spec, steps=(18, 19))
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory\n")
    before = sorted(p.name for p in (run / "events").iterdir())
    done = _cli(["eval", str(run), "--task", str(spec), "--workers", "2"], blocked / "ray")
    _one_error_line(done, f"{blocked / 'ray'}: ")
    assert sorted(p.name for p in (run / "events").iterdir()) == before, "no evaluator segment is left"
    spaced = tmp_path / "ray temp"
    spaced.mkdir()
    done = _cli(["eval", str(run), "--task", str(spec), "--workers", "2"], spaced)
    _one_error_line(done, "has a space")
    assert sorted(p.name for p in (run / "events").iterdir()) == before, "no evaluator segment is left"


def test_zero_shot_with_a_spaced_ray_temp_dir_names_the_space(tmp_path: Path) -> None:
    """A temp dir with a space: Ray's node would never register (ray.init raises its start-up time-out after
    about 30 s, twice); the line names the path instead, before Ray starts."""
    team = team_tree.copy(tmp_path / "team")
    spaced = tmp_path / "ray temp"
    spaced.mkdir()
    done = _cli(_zero_shot(team), spaced)
    _one_error_line(done, "has a space")
    assert str(spaced / "ray") in done.stderr
