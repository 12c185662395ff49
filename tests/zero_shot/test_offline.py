"""`recorder zero-shot` with no network at all (a new network namespace from `unshare -rn`, holding only a
loopback that is down): it scores from the local datasets directory and writes its results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]
pytest.importorskip("lm_eval")

EXE = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"


def _unshare_works() -> str | None:
    """None when `unshare -rn` runs a command here, else why not."""
    if shutil.which("unshare") is None:
        return "no `unshare` on this machine"
    done = subprocess.run(["unshare", "-rn", "true"], capture_output=True, text=True)
    return None if done.returncode == 0 else f"`unshare -rn` refused here: {done.stderr.strip()}"


def test_it_scores_with_no_network(training: Path, hf_cache: Path) -> None:
    why = _unshare_works()
    if why is not None:
        pytest.skip(why)
    run = training / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}  # its own doing
    args = [str(run / "snapshots/step_20"), "--hf-cache", str(hf_cache), "--limit", "2", "--tasks", "piqa,arc_easy"]
    done = subprocess.run(
        ["unshare", "-rn", EXE, "zero-shot", *args], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = list((run / "eval_results/step_0000020").glob("official_lmeval7_*/results.json"))
    doc = json.loads(path.read_text())
    assert list(doc["scores"]) == ["piqa", "arc_easy"] and doc["holdout"]["passed"]
    assert all(t["n"] == 2 for t in doc["tasks"].values())
