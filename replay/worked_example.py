"""A small recorder demo: records the worked example of docs/design.md section 5 as events, then verifies it.

Run with `python -m replay.worked_example --root runs`. Needs no torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from recorder.kinds import (
    BlockStart,
    BlockStop,
    CheckpointCommitted,
    InitStart,
    InitStop,
    RunOpened,
    RunStart,
    StepMetrics,
    TrainStop,
    WeightUpdate,
)
from recorder.log import LogWriter
from recorder.run import RunDir
from recorder.verify import verify_run

S = 1_000_000_000


def record_worked_example(root: Path, run_id: str | None = None, t0_ns: int = 1_780_000_000 * S) -> RunDir:
    """GBS 256, validation start 18, 20 steps of 60 s, saves blocking 2 s and committing 30 s later."""
    run = RunDir.create(root, run_id)
    gbs = 256
    with LogWriter(run, "trainer", clock=lambda: t0_ns) as w:
        opened = RunOpened(
            benchmark="qwen35_397b_grpo",
            ruleset="6.1.0",
            division="open",
            global_batch_size=gbs,
            config={},
            provenance={},
            resumed_from=None,
        )
        w.append(opened)
        w.append(InitStart(), time_ns=t0_ns - 10 * S)
        w.append(InitStop(), time_ns=t0_ns)
        w.append(RunStart(), time_ns=t0_ns)
        w.append(BlockStart(), step=1, samples_count=0, time_ns=t0_ns)
        blocked = 0
        for step in range(1, 21):
            update = t0_ns + (60 * step + blocked) * S
            w.append(WeightUpdate(), step=step, samples_count=step * gbs, time_ns=update)
            if step >= 18:
                committed = CheckpointCommitted(
                    path=f"checkpoints/step_{step:07d}",
                    sha256="",
                    bytes=0,
                    weight_update_ns=update,
                    save_begin_ns=update,
                    save_end_ns=update + 30 * S,
                    blocked_ns=2 * S,
                    fingerprint={},
                    format="safetensors",
                    dtype="bfloat16",
                )
                w.append(committed, step=step, samples_count=step * gbs, time_ns=update + 30 * S)
                blocked += 2
            metrics = StepMetrics(loss=0.0, reward=0.5, checkpoint_block_s=2.0 if step >= 18 else 0.0)
            w.append(metrics, step=step, samples_count=step * gbs, time_ns=update + 2 * S)
        end = t0_ns + (1200 + blocked) * S
        w.append(BlockStop(), step=20, samples_count=20 * gbs, time_ns=end)
        w.append(TrainStop(status="completed", reason=""), step=20, samples_count=20 * gbs, time_ns=end)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("runs"))
    args = parser.parse_args()
    run = record_worked_example(args.root)
    report = verify_run(run)
    events = sum(s.events for s in report.segments)
    print(f"recorded {events} events in {run.path}; verify: {'intact' if report.ok else 'FAILED'}")
    print(f"next: recorder events {run.path} --kind weight_update")


if __name__ == "__main__":
    main()
