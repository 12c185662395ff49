"""`recorder replay` on one large segment of a long training run: MB/s and peak RSS, beside `recorder verify`.

Records a run whose trainer segment is about `--mb` MiB: many steps, each a `weight_update` and a
`step_metrics` with the trainer's numbers and an `extra` of per-step statistics (as a long run logs), then
checkpoints of the last two steps and their evaluations (the second passes). Then, each in a fresh process
measured alone (its own peak RSS, not this process's), `recorder verify` (the peer) and `recorder replay`
(what `recorder replay` does: verify, derive the official log and write it, every interpretation's row of
scores.jsonl). The compliance checker, which `recorder replay` runs on each interpretation's log, is
mlperf-logging's memory and time, not ours: `--check` adds the whole `recorder replay` command as a third row.

    python bench/replay_memory.py              # 64 MiB, a quick look
    python bench/replay_memory.py --mb 1024    # a 1 GB segment
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and bench/replay.py would shadow `replay`.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

from recorder.store.kinds import (  # noqa: E402
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
from recorder.store.log import LogWriter  # noqa: E402
from recorder.store.run import RunDir  # noqa: E402
from tests.kit.synthetic import T0, S, record_evals  # noqa: E402

GBS = 256
# What `recorder replay RUN` does, less mlperf-logging's compliance checker (it checks every interpretation's
# log for derived/scores.jsonl; that is the checker's memory and time: `--check` measures the whole command).
REPLAY = """
import resource, sys, time
t = time.perf_counter()
from recorder.store.run import derived_dir, write_derived
from replay.derive import derive_from
from replay.rulesets import get_known
from replay.run_scan import scan_run
from replay.scorekeeping.scores import compute_scores, write_rows
from replay.source import Streamed
from replay.checkers.preflight import verified
problems, report = verified(sys.argv[1], False)
scan = scan_run(Streamed(report.run))
d = derive_from(scan.timeline, scan.source, get_known("6.1.0"), "official")
write_derived(derived_dir(report.run) / "result_official.txt", d.chunks())
write_rows(report.run, compute_scores(report.run, None, check=False, done={"official": (d, None)}, scan=scan), scan.heads)
print(f"official: {d.status}, passing step {d.passing_step}, {d.minutes:.3f} minutes; {len(d.lines)} lines")
"""
EXTRA_STATS = 24  # per-step statistics beside the trainer's own numbers (~1 KB of step_metrics per step)


def _metrics(step: int) -> StepMetrics:
    extra = {f"reward_p{i:02d}": round((step * 7 + i) % 1000 / 1000, 6) for i in range(EXTRA_STATS)}
    return StepMetrics(
        loss=0.5 - step % 97 / 1000,
        reward=0.25 + step % 89 / 1000,
        grad_norm=1.0 + step % 13 / 100,
        tokens=float(GBS * 37),
        samples=GBS,
        generation_s=0.41,
        train_s=0.18,
        refit_s=0.02,
        checkpoint_block_s=0.0,
        step_s=0.62,
        extra=extra,
    )


def record(root: Path, mb: int) -> tuple[RunDir, int]:
    """A run whose trainer segment reaches `mb` MiB; returns it and its number of steps."""
    run = RunDir.create(root, "long")
    target = mb << 20
    with LogWriter(run, "trainer", clock=lambda: T0, durability="at-close") as w:
        opened = RunOpened(
            benchmark="qwen35_397b_grpo",
            ruleset="6.1.0",
            division="open",
            global_batch_size=GBS,
            config={},
            provenance={},
            resumed_from=None,
        )
        w.append(opened, time_ns=T0 - 10 * S)
        w.append(InitStart(), time_ns=T0 - 10 * S)
        w.append(InitStop(), time_ns=T0)
        w.append(RunStart(), time_ns=T0)
        w.append(BlockStart(), step=1, samples_count=0, time_ns=T0)
        step = 0
        while w.path.stat().st_size < target or step < 2:
            for _ in range(1000):
                step += 1
                update = T0 + step * S
                w.append(WeightUpdate(), step=step, samples_count=step * GBS, time_ns=update)
                w.append(_metrics(step), step=step, samples_count=step * GBS, time_ns=update + S // 2)
        for saved in (step - 1, step):
            update = T0 + saved * S
            committed = CheckpointCommitted(
                path=f"checkpoints/step_{saved:07d}",
                sha256="",
                bytes=0,
                weight_update_ns=update,
                save_begin_ns=update,
                save_end_ns=update + S // 4,
                blocked_ns=0,
                fingerprint={},
                format="safetensors",
                dtype="bfloat16",
            )
            w.append(committed, step=saved, samples_count=saved * GBS, time_ns=update + S // 4)
        end = T0 + (step + 1) * S
        w.append(BlockStop(), step=step, samples_count=step * GBS, time_ns=end)
        w.append(TrainStop(status="completed", reason=""), step=step, samples_count=step * GBS, time_ns=end)
    record_evals(run, [(step - 1, 0.68), (step, 0.72)], GBS, start_s=step + 30, each_s=60)
    return run, step


# A child spawned straight from this process starts with this process's peak RSS as its own ru_maxrss (the
# kernel keeps the larger across exec, and this process built the run), so a launcher of a few MiB spawns the
# command and reports the command's own peak, from its RUSAGE_CHILDREN, on a last line of its own.
PEAK = "peak-rss-kib"
LAUNCH = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:])\n"
    f"print('\\n{PEAK}', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode)\n"
)


def measured(args: list[str]) -> tuple[float, float, str]:
    """Run a command alone; its wall seconds, its own peak RSS (MiB) and its stdout."""
    with tempfile.TemporaryFile("w+") as out:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", LAUNCH, *args], stdout=out, stderr=subprocess.STDOUT, text=True)
        seconds = time.perf_counter() - t
        out.seek(0)
        text, _, trailer = out.read().rpartition(f"\n{PEAK} ")
    kib, returncode = (int(x) for x in trailer.split())
    if returncode != 0:
        sys.exit(f"{' '.join(args)} failed (exit {returncode}):\n{text}")
    return seconds, kib / 1024, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64, help="trainer segment size in MiB (default 64)")
    parser.add_argument("--check", action="store_true", help="also measure `recorder replay --check`")
    args = parser.parse_args()
    recorder = [sys.executable, "-m", "recorder.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        run, steps = record(Path(tmp), args.mb)
        record_s = time.perf_counter() - t
        size = sum(p.stat().st_size for p in run.events.iterdir()) / 2**20
        print(f"run: {steps} steps, {size:.0f} MiB of events (recorded in {record_s:.0f} s)")
        rows = [
            ("verify", [*recorder, "verify", str(run.path)]),
            ("replay", [sys.executable, "-c", REPLAY, str(run.path)]),
        ]
        if args.check:
            rows.append(("recorder replay", [*recorder, "replay", str(run.path)]))
        for name, command in rows:
            seconds, rss, out = measured(command)
            print(f"{name:15} {size / seconds:6.1f} MiB/s ({seconds:6.1f} s)  peak RSS {rss:7.0f} MiB")
            if name == "replay":
                mllog = run.derived / "result_official.txt"
                print(f"{'':15} {out.strip().splitlines()[-1]}; mllog {mllog.stat().st_size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
