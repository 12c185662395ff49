"""Regenerate the docs' pictures: `python docs/make_pictures.py` (needs the `plot` extra).

worked-example.png: docs/design.md section 5's run (tests.kit.synthetic.record_worked_example) evaluated in the
order 19, 18, 20, scored by replay under every interpretation.
rcp-gbs256-seed1.png: a real reference convergence log, imported.
reward-curves.png: the reward of the six GBS 256 reference runs.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from recorder.adapters.mllog_import import import_file
from recorder.store.log import LogWriter
from recorder.store.run import RunDir
from replay.scorekeeping.scores import write_scores
from tests.kit.synthetic import S, record_worked_example

DOCS = Path(__file__).resolve().parent
CORPUS = DOCS.parents[1] / "shared" / "corpus" / "qwen35_397b_grpo_rcp"
T0 = 1_780_000_000 * S


def evaluate(run: RunDir) -> None:
    """The worked example's evaluation: from 1300 s, steps 19, 18, 20 for 60 s each."""
    t = T0 + 1300 * S
    with LogWriter(run, "evaluator", clock=lambda: t) as w:
        for step, accuracy in [(19, 0.72), (18, 0.70), (20, 0.71)]:
            w.append(
                "eval_start",
                step=step,
                samples_count=step * 256,
                time_ns=t,
                data={"checkpoint": f"checkpoints/step_{step:07d}", "sha256": "", "worker": "w0"},
            )
            w.append(
                "eval_result",
                step=step,
                samples_count=step * 256,
                key="accuracy",
                value=accuracy,
                time_ns=t + 60 * S,
                data={"metric": "pass@4", "n": 251, "k": 4, "target": 0.69, "results": ""},
            )
            w.append("eval_stop", step=step, samples_count=step * 256, time_ns=t + 60 * S)
            t += 60 * S


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="recorder-docs-"))
    worked = record_worked_example(root, "worked-example")
    evaluate(worked)
    write_scores(worked.path)
    seeds = []
    for seed in range(1, 7):
        run = import_file(CORPUS / "GBS256" / f"seed_{seed}.out", root, f"rcp-gbs256-seed{seed}").run
        write_scores(run.path)
        seeds.append(run)
    recorder = [sys.executable, "-m", "recorder.cli"]
    subprocess.run(
        [
            *recorder[:1],
            "-c",
            "from recorder.cli import main; main()",
            "plot",
            str(worked.path),
            "-o",
            str(DOCS / "worked-example.png"),
        ],
        check=True,
    )
    subprocess.run(
        [
            *recorder[:1],
            "-c",
            "from recorder.cli import main; main()",
            "plot",
            str(seeds[0].path),
            "-o",
            str(DOCS / "rcp-gbs256-seed1.png"),
        ],
        check=True,
    )
    only_rcp = root / "qwen35_397b_grpo_rcp-GBS256"
    only_rcp.mkdir()
    for run in seeds:
        run.path.rename(only_rcp / run.path.name)
    subprocess.run(
        [
            *recorder[:1],
            "-c",
            "from recorder.cli import main; main()",
            "plot",
            "--root",
            str(only_rcp),
            "--metric",
            "reward",
            "-o",
            str(DOCS / "reward-curves.png"),
        ],
        check=True,
    )
    print(f"runs kept in {root}")


if __name__ == "__main__":
    main()
