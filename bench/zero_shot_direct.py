"""`recorder zero-shot` against lm-eval run directly (`lm_eval.simple_evaluate` with lm-eval's own HFLM and
task definitions: tests/kit/lm_eval_direct.py) on the same team checkpoint and task data.

    python bench/zero_shot_direct.py [--rounds 2] [--limit N]

The checkpoint is the team fixture's archive (tests/fixtures/team: FSDP2 DCP with model + optimizer), the
data the seven tasks' local datasets (tests/kit/datasets_cache.py). Each side runs as its own
command, alternating, `rounds` times; wall seconds and CPU seconds (user + system of the command and its
children) per run, the load average before each. `recorder zero-shot` runs as a team runs it (the holdout
check on: it recomputes eval/loss in bf16 with capacity on; every shard hashed) and once more with
`--holdout off`, the work lm-eval does; the direct run does neither. The ratio is direct / ours: above 1,
ours is faster.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.kit.datasets_cache import make_cache

REPO = Path(__file__).resolve().parents[1]
TEAM = REPO / "tests/fixtures/team"
ARCHIVE = Path("archive/ckpt_E2")
FACTORY = "models.moe:build_model"


def measured(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s of the command and its children, 1-minute load before)."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=REPO)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), load


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="examples per task (0: all the local data)")
    a = p.parse_args()
    exe = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        team, cache = root / "team", make_cache(root / "hf")
        shutil.copytree(TEAM, team, ignore=shutil.ignore_patterns("__pycache__", "eval_results"))
        limit = ["--limit", str(a.limit)] if a.limit else []
        ours = [exe, "zero-shot", str(team / ARCHIVE), "--hf-cache", str(cache), "--model-code", str(team),
                "--model-factory", FACTORY, "--workers", "1", *limit]  # fmt: skip
        ckpt = team / ARCHIVE / "fsdp2_epoch_2"
        direct = [sys.executable, "-m", "tests.kit.lm_eval_direct", str(ckpt), str(team), str(cache)]
        sides = {
            "recorder zero-shot": lambda i: [*ours, "-o", str(root / f"ours{i}")],
            "recorder zero-shot --holdout off": lambda i: [*ours, "--holdout", "off", "-o", str(root / f"off{i}")],
            "lm-eval direct (HFLM)": lambda i: [*direct, str(a.limit), str(root / f"direct{i}.json")],
        }
        found: dict[str, list[tuple[float, float, float]]] = {name: [] for name in sides}
        for i in range(a.rounds):
            for name, command in sides.items():
                found[name].append(measured(command(i), env))
    print(f"{'command':34} {'wall s':>8} {'CPU s':>8} {'load':>6}   (best of {a.rounds}; load before it)")
    best = {name: min(runs) for name, runs in found.items()}
    for name, (wall, cpu, load) in best.items():
        print(f"{name:34} {wall:8.2f} {cpu:8.2f} {load:6.2f}")
    direct_wall = best["lm-eval direct (HFLM)"][0]
    for name in ("recorder zero-shot", "recorder zero-shot --holdout off"):
        print(f"direct / {name}: {direct_wall / best[name][0]:.2f}x wall (above 1: ours is faster)")


if __name__ == "__main__":
    main()
