"""Bench: `recorder report` on a run of one million events. Target: the command a user types, start-up
included, written in <= 5 s and <= 5 MB.

    python bench/report.py [--events 1000000] [--dir DIR --keep] [--repeat 3]

The run is bench/replay.py's synthetic closed GBS-256 run (per step a weight update, its metrics and,
from the validation start, a checkpoint: 333,000 steps and checkpoints), written into real segments by the
real log writer, plus train_stop and an evaluator session. Then, as a user would before attaching a
report: `recorder replay` (the official mllog, 90 MB) and its scores (compliance checker off: seven
checker passes over 90 MB take minutes and are not the report's cost), and `recorder compact`.

Timed, each as a subprocess (wall, and CPU of the child with its threads): the first `recorder report`
of the run (it runs mlperf-logging's RCP checker on the 90 MB mllog once; the verdict is kept in
derived/rcp.json, as `recorder replay --check` keeps it), the median of --repeat later ones, and the peer:
`recorder query` counting the run's events (the same start-up, the history views, one pass over the
events). A compacted run is not re-verified by the report (compaction verified it), nor, past the
re-derivation budget (replay.scorekeeping.scores_check.RECHECK_EVENTS, 100,000 events),
its scores file re-derived; the page says both.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

from recorder.history.compact import compact_run, fresh_manifest  # noqa: E402
from recorder.store.log import LogWriter  # noqa: E402
from recorder.store.reader import read_run  # noqa: E402
from recorder.store.run import RunDir  # noqa: E402
from replay.derive import derive_run  # noqa: E402
from replay.scorekeeping.scores import write_scores  # noqa: E402

LIMIT_S, LIMIT_MB = 5.0, 5.0


def _synthetic(events: int) -> list:  # type: ignore[type-arg]
    spec = importlib.util.spec_from_file_location("bench_replay", _HERE / "replay.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthetic_events(events)  # type: ignore[no-any-return]


def build(root: Path, events: int) -> RunDir:
    """The synthetic run's events through LogWriter, one segment per writer, plus block_stop/train_stop."""
    run = RunDir.create(root, "million")
    synthetic = _synthetic(events)
    by_writer: dict[str, list] = {}  # type: ignore[type-arg]
    for e in synthetic:
        by_writer.setdefault(e.writer, []).append(e)
    for writer, evs in by_writer.items():
        start = evs[0].time_ns
        with LogWriter(run, writer, clock=lambda start=start: start) as w:
            # the builder is not what is measured: skip the per-event fsync (the bytes written are the same)
            w._critical = frozenset()
            for e in evs:
                w.append(
                    e.kind,
                    step=e.step,
                    samples_count=e.samples_count,
                    key=e.key,
                    value=e.value,
                    data=e.data,
                    time_ns=e.time_ns,
                )
            if writer == "trainer":
                last = max(x.step or 0 for x in evs)
                t = max(x.time_ns for x in evs) + 1
                w.append("block_stop", step=last, samples_count=last * 256, time_ns=t)
                w.append(
                    "train_stop",
                    step=last,
                    samples_count=last * 256,
                    time_ns=t,
                    data={"status": "completed", "reason": ""},
                )
    return run


def prepare(run: RunDir) -> None:
    """What a user runs before a report: replay's mllog and scores, and compaction (each step skipped when
    its file is already there, so an interrupted preparation resumes)."""
    run.derived.mkdir(exist_ok=True)
    mllog = run.derived / "result_official.txt"
    if not mllog.exists():
        mllog.write_text(derive_run(read_run(run).events, "6.1.0", "official").text())
    if not (run.derived / "scores.jsonl").exists():
        write_scores(run, check=False)
    if fresh_manifest(run) is None:
        compact_run(run)


RECORDER = str(Path(sys.executable).with_name("recorder"))


def command(*args: str) -> tuple[float, float]:
    """(wall s, CPU s of the child and its threads) of one `recorder` command; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run([RECORDER, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"recorder {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=None, help="build here (reused when it holds the run)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="recorder-report-bench-"))
    try:
        run_path = base / "million"
        if not run_path.exists():
            t = time.perf_counter()
            run = build(base, args.events)
            print(f"built {run.path}: {time.perf_counter() - t:.1f} s", flush=True)
        run = RunDir.open(run_path)
        t = time.perf_counter()
        prepare(run)
        print(f"replayed and compacted: {time.perf_counter() - t:.1f} s", flush=True)
        out = base / "report.html"
        manifest = fresh_manifest(run)
        assert manifest is not None
        report = ("report", str(run.path), "-o", str(out))
        first = command(*report)
        warm = median([command(*report) for _ in range(args.repeat)])
        scan = ("query", "--root", str(base), "SELECT count(*), max(time_ns) FROM events")
        peer = median([command(*scan) for _ in range(args.repeat)])
        size = out.stat().st_size / 1e6
        print(f"events: {manifest['events']:,}")
        print(f"command: {RECORDER} {' '.join(report)}")
        print(
            f"first report of the run (RCP checker once, unless replay --check ran it): wall {first[0]:.2f} s, CPU {first[1]:.2f} s"
        )
        print(f"report, median of {args.repeat}: wall {warm[0]:.2f} s, CPU {warm[1]:.2f} s (target <= {LIMIT_S} s)")
        print(
            f"peer `recorder query` (one scan of the run's events), median of {args.repeat}: wall {peer[0]:.2f} s, "
            f"CPU {peer[1]:.2f} s; "
            f"report/peer wall {warm[0] / peer[0]:.2f}x, CPU {warm[1] / peer[1]:.2f}x"
        )
        print(f"size: {size:.2f} MB (target <= {LIMIT_MB} MB)")
        print("PASS" if warm[0] <= LIMIT_S and size <= LIMIT_MB else "OVER TARGET")
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
