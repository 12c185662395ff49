"""Bench: `derive` on a synthetic run of one million events vs mlperf-logging reading the log it produces.

Prints, from one run on this machine: events/s of derive (events in memory; reading segments is the
core's bench), the seconds mlperf-logging's parser and its 6.1.0 compliance checker take on the derived
log, and the ratio. Target: deriving is faster than the checker reading its output.

Then: `recorder import` and `recorder score` (in process) of N imported runs, sets of 10 copies of
a real result file from ../shared/corpus, against mlperf-logging's result summarizer
(`_compute_strong_score_standalone`) over the same folders, as a ratio of CPU seconds; every set's score
must agree. `--workers` processes (default: one per CPU) each run both sides on their folders in turn, so
both see the same load and 10,000 runs take minutes.

    python bench/replay.py [--events 1000000] [--imported-runs 10000] [--workers N]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and its name would shadow the `replay` package.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

from recorder.store.events import Event  # noqa: E402
from replay.checkers.check import compliance, mlperf_logging_version  # noqa: E402
from replay.derive import derive_run  # noqa: E402

S = 1_000_000_000
T0 = 1_780_000_000 * S
GBS = 256


def synthetic_events(target: int) -> list[Event]:
    """A closed-division GBS-256 run: per step a weight update, its metrics and (from step 18) a checkpoint;
    the validation-start checkpoint is evaluated and passes. About `target` events."""
    from tests.kit.synthetic import CLOSED_256

    events: list[Event] = []

    def add(
        kind: str,
        t: int,
        step: int | None = None,
        key: str | None = None,
        value: object = None,
        data: dict[str, object] | None = None,
        writer: str = "trainer",
    ) -> None:
        events.append(
            Event(
                run_id="bench",
                writer=writer,
                seq=len(events),
                time_ns=t,
                mono_ns=0,
                kind=kind,
                step=step,
                samples_count=None if step is None else step * GBS,
                key=key,
                value_json=None if value is None else json.dumps(value),
                data_json=json.dumps(data or {}, sort_keys=True),
                digest="",
                segment="trainer-0001.arrows",
            )
        )

    add(
        "run_opened",
        T0 - 10 * S,
        data={
            "benchmark": "qwen35_397b_grpo",
            "ruleset": "6.1.0",
            "division": "closed",
            "global_batch_size": GBS,
            "config": {},
            "provenance": {},
            "resumed_from": None,
        },
    )
    add("init_start", T0 - 10 * S)
    for k, v in CLOSED_256.items():
        add("mllog_config", T0 - 5 * S, key=k, value=v)
    add("init_stop", T0)
    add("run_start", T0)
    events.append(
        Event(
            run_id="bench",
            writer="trainer",
            seq=len(events),
            time_ns=T0,
            mono_ns=0,
            kind="block_start",
            step=1,
            samples_count=0,
            key=None,
            value_json=None,
            data_json="{}",
            digest="",
            segment="",
        )
    )
    steps = max(20, (target - len(events) - 4) // 3)
    metrics = json.dumps({"loss": 0.5, "reward": 0.25, "grad_norm": 1.0}, sort_keys=True)
    for step in range(1, steps + 1):
        update = T0 + step * 60 * S
        add("weight_update", update, step)
        events.append(
            Event(
                run_id="bench",
                writer="trainer",
                seq=len(events),
                time_ns=update + S,
                mono_ns=0,
                kind="step_metrics",
                step=step,
                samples_count=step * GBS,
                key=None,
                value_json=None,
                data_json=metrics,
                digest="",
                segment="trainer-0001.arrows",
            )
        )
        if step >= 18:
            saved = {
                "path": f"checkpoints/step_{step:07d}",
                "sha256": f"{step:064x}",
                "bytes": 1_000_000,
                "weight_update_ns": update,
                "save_begin_ns": update,
                "save_end_ns": update + 30 * S,
                "blocked_ns": 0,
                "fingerprint": {},
                "format": "safetensors",
                "dtype": "bfloat16",
            }
            add("checkpoint_committed", update + 30 * S, step, data=saved)
    end = T0 + (steps * 60 + 100) * S
    add("eval_start", end, 18, writer="evaluator")
    add("eval_result", end + 50 * S, 18, key="accuracy", value=0.72, writer="evaluator")
    add("eval_stop", end + 60 * S, 18, writer="evaluator")
    return events


def timed(fn):  # type: ignore[no-untyped-def]
    """(result, wall seconds, CPU seconds of this process): the machine is shared, so CPU time is the
    fairer of the two; both are printed and the ratios use CPU time."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


CORPUS = _HERE.parent.parent / "shared" / "corpus"
# 58 mllog lines, closed llama2_70b_lora, compliant under 5.1.0 (RCPs exist: the RCP checker runs per set).
SAMPLE = "mlperf-results/training_results_v5.1/AMD/results/MI355X_EPYC_9575F_pytorch/llama2_70b_lora/result_0.txt"
SET_SIZE = 10


def _ours(folder: Path, root: Path) -> float | None:
    """`recorder import` of a result folder, then `recorder score` of its runs (in process)."""
    from recorder.adapters.mllog_import import import_file
    from recorder.adapters.result_folder import read_result_folder
    from replay.scorekeeping.score_runs import score_runs

    found = read_result_folder(folder)
    made = [import_file(f, root, None, "5.1.0", found.result_set).run.path for f in found.files]
    [result] = score_runs(made, None, None, False)
    return result.score_minutes


def _theirs(folder: Path) -> float | None:
    """mlperf-logging's result summarizer on the same folder."""
    import contextlib
    import io

    from mlperf_logging.result_summarizer.result_summarizer import _compute_strong_score_standalone

    with contextlib.redirect_stdout(io.StringIO()):  # it prints a line per dropped run
        score = _compute_strong_score_standalone("llama2_70b_lora", "system", False, str(folder), "training", "5.1.0")
    return score[0]  # type: ignore[no-any-return]


def _both(folders: list[Path], root: Path) -> tuple[list[tuple[float | None, float | None]], float, float]:
    """Both sides on each folder in turn, so that both see the same load: (score pairs, our CPU seconds,
    their CPU seconds). Which side goes first alternates from folder to folder."""
    pairs: list[tuple[float | None, float | None]] = []
    cpu = {"ours": 0.0, "theirs": 0.0}
    for i, folder in enumerate(folders):
        got: dict[str, float | None] = {}
        for side in ("ours", "theirs") if i % 2 else ("theirs", "ours"):
            t = time.process_time()
            got[side] = _ours(folder, root) if side == "ours" else _theirs(folder)
            cpu[side] += time.process_time() - t
        pairs.append((got["ours"], got["theirs"]))
    return pairs, cpu["ours"], cpu["theirs"]


def _warm(_: int) -> None:
    import mlperf_logging.result_summarizer.result_summarizer  # noqa: F401

    import recorder.adapters.result_folder  # noqa: F401
    import replay.scorekeeping.score_runs  # noqa: F401


def bench_import_score(runs: int, corpus: Path, workers: int) -> None:
    """Import and score `runs` runs against the summarizer over the same result folders, in `workers`
    processes that each take every workers-th folder; CPU seconds are the workers' own, summed."""
    import multiprocessing

    raw = (corpus / SAMPLE).read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        folders = []
        for s in range((runs + SET_SIZE - 1) // SET_SIZE):
            folder = Path(tmp) / "results" / "system" / f"set_{s:05d}" / "llama2_70b_lora"
            folder.mkdir(parents=True)
            for i in range(min(SET_SIZE, runs - s * SET_SIZE)):
                (folder / f"result_{i}.txt").write_bytes(raw)
            folders.append(folder)
        root = Path(tmp) / "runs"
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            pool.map(_warm, range(workers))  # start-up and imports, outside the wall clock that counts
            wall = time.perf_counter()
            done = pool.starmap(_both, [(folders[i::workers], root) for i in range(workers)])
            wall = time.perf_counter() - wall
    pairs = [pair for share, _, _ in done for pair in share]
    our_s, their_s = sum(d[1] for d in done), sum(d[2] for d in done)
    assert all(ours == theirs for ours, theirs in pairs), pairs[:3]
    print(f"\n{runs:,} imported runs in {len(folders):,} result folders of {SET_SIZE} copies of {SAMPLE}")
    print(f"{workers} worker processes, each running both sides on its folders in turn; {wall:.1f} s wall in all")
    print("                                                      CPU s   runs/s (CPU)")
    print(f"recorder import + score (checker, RCP, scores.jsonl) {our_s:7.2f}   {runs / our_s:,.1f}")
    print(f"result summarizer (_compute_strong_score_standalone) {their_s:7.2f}   {runs / their_s:,.1f}")
    print(f"ratio ours / summarizer: {our_s / their_s:.2f}x (CPU); every set's score equal: {len(pairs)} sets")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000, help="0: skip the derive bench")
    parser.add_argument("--imported-runs", type=int, default=10_000, help="0: skip the import+score bench")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes of the import+score bench")
    args = parser.parse_args()
    if args.events:
        bench_derive(args.events)
    if args.imported_runs:
        bench_import_score(args.imported_runs, args.corpus, args.workers)


def bench_derive(count: int) -> None:
    from mlperf_logging.compliance_checker.mlp_parser import parse_file

    events = synthetic_events(count)
    derivation, derive_wall, derive_s = timed(lambda: derive_run(events, "6.1.0", "official"))
    text = derivation.text()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "result_0.txt"
        path.write_text(text)
        (loglines, errors), parse_wall, parse_s = timed(lambda: parse_file(str(path), ruleset="6.1.0"))
        result, check_wall, check_s = timed(lambda: compliance(text))
    assert not errors and len(loglines) == len(derivation.lines)
    print(
        f"synthetic run: {len(events):,} events -> {len(derivation.lines):,} mllog lines "
        f"({len(text) / 1e6:.1f} MB), status {derivation.status}, checker {result.verdict}"
    )
    print("                                       CPU s   wall s")
    print(
        f"derive (replay, official)            {derive_s:7.2f}  {derive_wall:7.2f}   "
        f"{len(events) / derive_s:,.0f} events/s (CPU)"
    )
    print(
        f"mlperf-logging {mlperf_logging_version()} parser       {parse_s:7.2f}  {parse_wall:7.2f}   "
        f"{len(derivation.lines) / parse_s:,.0f} lines/s (CPU)"
    )
    print(
        f"mlperf-logging compliance checker    {check_s:7.2f}  {check_wall:7.2f}   (parses the file itself, then checks)"
    )
    print(
        f"ratio checker / derive: {check_s / derive_s:.2f}x   parser / derive: {parse_s / derive_s:.2f}x   "
        f"({'derive is faster' if derive_s < check_s else 'derive is SLOWER'} than the checker reading its output)"
    )


if __name__ == "__main__":
    main()
