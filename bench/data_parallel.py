"""Seconds per training step of the default config in 1 process and in N data-parallel processes (torchrun).

    python bench/data_parallel.py                # 1 process, then 2 (torchrun --standalone), default steps
    python bench/data_parallel.py --nproc 2 --steps 19

Both runs train the same global batch (the default 16 prompts x 16 samples) from the same cached warm-up,
one after the other on this machine, each as its own `recorder train` (OMP_NUM_THREADS=1 per process). Step
times come from the runs' own step_metrics (step 1 left out: first-call overheads); the data-parallel run's
split (sampling, training, gathering the weights) from its ranks' rank_step events. Start-up (torch import,
process group) is the command's wall time minus its steps, reported apart. The loss curves are compared
too: same batch, same init, so they differ only by float rounding. The ratio is reported, not a target: on
a machine with fewer free cores than processes it says so. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean
from typing import Any

from recorder.store.reader import read_run
from recorder.store.run import RunDir
from trainer.config import load_config


def train(root: Path, run_id: str, nproc: int, steps: int) -> float:
    """Train one run; returns the command's wall seconds."""
    args = ["train", "--root", str(root), "--run-id", run_id, "--set", f"max_steps={steps}"]
    if nproc == 1:
        exe = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
        command = [exe, *args]
    else:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
        command = [*launcher, "-m", "recorder.cli", *args]
    t0 = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def facts(run: Path) -> tuple[dict[int, dict[str, Any]], dict[str, list[float]]]:
    """{step: step_metrics data}, and each rank_step duration over the ranks and steps after the first."""
    events = read_run(RunDir.open(run)).events
    steps = {e.step: e.data for e in events if e.kind == "step_metrics" and e.step is not None}
    split: dict[str, list[float]] = {"generation_s": [], "train_s": [], "gather_s": []}
    for e in events:
        if e.kind == "rank_step" and e.step is not None and e.step > 1:
            for key, values in split.items():
                values.append(float(e.data[key]))
    return steps, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nproc", type=int, default=2, help="data-parallel processes (default 2)")
    parser.add_argument("--steps", type=int, default=0, help="steps per run (0: the validation start, the least)")
    a = parser.parse_args()
    a.steps = a.steps or load_config().validation_start
    with tempfile.TemporaryDirectory(prefix="bench-dp-") as tmp:
        root = Path(tmp)
        wall = {n: train(root, f"p{n}", n, a.steps) for n in (1, a.nproc)}
        one, _ = facts(root / "p1")
        many, split = facts(root / f"p{a.nproc}")
    timed = range(2, a.steps + 1)
    step_s = {1: mean(one[s]["step_s"] for s in timed), a.nproc: mean(many[s]["step_s"] for s in timed)}
    startup = {n: wall[n] - sum((one if n == 1 else many)[s]["step_s"] for s in one) for n in wall}
    loss_diff = max(abs(one[s]["loss"] - many[s]["loss"]) for s in one)
    for n in (1, a.nproc):
        print(f"{n} process(es): {step_s[n]:.3f} s/step (steps 2-{a.steps}), start-up {startup[n]:.1f} s")
    print(
        f"{a.nproc} ranks, mean per rank and step: sampling {mean(split['generation_s']):.3f} s, "
        f"training {mean(split['train_s']):.3f} s, gathering the weights {mean(split['gather_s']):.3f} s"
    )
    print(f"ratio (1 process / {a.nproc}): {step_s[1] / step_s[a.nproc]:.2f}x; loss curves differ by {loss_diff:.1e}")
    print(
        json.dumps(
            {
                "nproc": a.nproc,
                "steps": a.steps,
                "one_process_step_s": round(step_s[1], 4),
                "data_parallel_step_s": round(step_s[a.nproc], 4),
                "ratio": round(step_s[1] / step_s[a.nproc], 3),
                "rank_generation_s": round(mean(split["generation_s"]), 4),
                "rank_train_s": round(mean(split["train_s"]), 4),
                "rank_gather_s": round(mean(split["gather_s"]), 4),
                "max_loss_difference": loss_diff,
                "cpus": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
