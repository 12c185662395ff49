"""Ctrl-C in `recorder zero-shot` (a real SIGINT to the command's process group, as a terminal sends it):
exit 130, one line saying which results were kept and how to go on, no traceback; every checkpoint that said
it finished has its results written whole, the others nothing; no process of the command (Ray's included) is
left running. And an error in one Ray worker stops the command with every actor killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]
pytest.importorskip("lm_eval")

EXE = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"


def _group_gone(pgid: int) -> bool:
    """Whether every process of the group has exited (waiting a little for Ray's to wind down)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.5)
    return False


def _interrupt_after_first(args: list[str]) -> tuple[int, str, str, int]:
    """Start the command, send SIGINT to its group as soon as one checkpoint says it finished."""
    p = subprocess.Popen(
        [EXE, "zero-shot", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    assert p.stdout is not None
    said = []
    for line in p.stdout:
        said.append(line)
        if "holdout eval/loss" in line:
            os.killpg(p.pid, signal.SIGINT)
            break
    out, err = p.communicate(timeout=300)
    return p.returncode, "".join(said) + out, err, p.pid


@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_keeps_the_finished_checkpoints_and_says_how_to_go_on(
    training: Path, hf_cache: Path, workers: str
) -> None:
    run = training / "run"
    paths = [run / "snapshots/step_10", run / "snapshots/step_20", run]
    out = training / "results"
    args = [*map(str, paths), "--hf-cache", str(hf_cache), "--limit", "1", "--workers", workers, "-o", str(out)]
    rc, stdout, stderr, pgid = _interrupt_after_first(args)
    assert rc == 130, stdout + stderr
    assert "Traceback" not in stdout + stderr, stderr
    said = [line for line in stderr.splitlines() if "interrupted" in line]
    assert len(said) == 1 and said[0].startswith("zero-shot: interrupted; kept the results of "), stderr
    finished = {line.split(": ")[0] for line in stdout.splitlines() if "holdout eval/loss" in line}
    assert finished and len(finished) < 3, stdout
    written = {json.loads(p.read_text())["label"]: p.parent for p in out.glob("*/results.json")}
    assert set(written) == finished, (written, stdout)
    for folder in written.values():
        assert sorted(p.name for p in folder.iterdir()) == ["eval.log", "results.json", "summary.txt"]
        assert str(folder) in said[0]
    left = [p for p, label in zip(paths, ["run/step_10", "run/step_20", "run"], strict=True) if label not in finished]
    rest = f"--limit 1 --hf-cache {hf_cache} --workers {workers} -o {out}"
    assert said[0].endswith(f"run recorder zero-shot {' '.join(map(str, left))} {rest}"), said[0]
    assert _group_gone(pgid), "a process of the interrupted command is still running"


STALLING_MODEL = '''"""A team's model whose build never ends when its config says `stall` (only a kill ends its worker) and
whose forward raises when it says `fail`."""

import time

from transformers import LlamaConfig, LlamaForCausalLM


class Failing(LlamaForCausalLM):
    def forward(self, *args, **kwargs):
        raise RuntimeError("the team's model code failed")


def build(config, *, capacity=True):
    while config.get("stall"):
        time.sleep(0.5)
    fields = {k: v for k, v in config.items() if k not in ("model_type", "stall", "fail")}
    return (Failing if config.get("fail") else LlamaForCausalLM)(LlamaConfig(**fields))
'''


def test_an_error_in_one_worker_kills_every_actor(training: Path, hf_cache: Path, ray_cluster: None) -> None:
    import ray

    from evaluator.zero_shot.loading import ModelCode
    from evaluator.zero_shot.options import ZeroShotOptions
    from evaluator.zero_shot.runner import zero_shot

    run, other = training / "run", training / "other"
    shutil.copytree(run, other)
    config = json.loads((other / "config.json").read_text())
    (run / "config.json").write_text(json.dumps(config | {"fail": True}))  # this one raises where none is expected
    (other / "config.json").write_text(json.dumps(config | {"stall": True}))  # this one never finishes loading
    (training / "teamcode/stalling").mkdir(parents=True)
    (training / "teamcode/stalling/__init__.py").write_text(STALLING_MODEL)
    code = ModelCode(root=training / "teamcode", factory="stalling:build")
    paths = [run / "snapshots/step_10", other / "snapshots/step_20"]
    options = ZeroShotOptions(tasks=("piqa",), limit=1, hf_cache=hf_cache, workers=2, code=code)
    cpus = ray.cluster_resources()["CPU"]
    with pytest.raises(Exception, match="the team's model code failed"):
        zero_shot(paths, options, echo=lambda _: None)
    deadline = time.monotonic() + 60  # the stalled worker frees its CPU only when it is killed
    while ray.available_resources().get("CPU", 0) < cpus and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ray.available_resources().get("CPU", 0) == cpus, "a worker of the failed command is still running"
