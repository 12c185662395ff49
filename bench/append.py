"""Append cost of the recorder (default durability) against mlperf_logging.mllog writing the same events.

The workload is a real mllog of this benchmark (../shared/corpus/qwen35_397b_grpo_rcp/GBS256/seed_1.out):
its lines, in order, repeated until N events. Each line is logged by mllog to a file (its usual
configuration, stdout handler off) and appended by the recorder as the event kind that carries it
(mllog_config for configuration keys, step_metrics for tracked_stats, eval_result for eval_accuracy, ...).
The recorder fsyncs critical kinds before returning (run boundaries, eval results here) and group-commits
the rest; mllog never fsyncs. A second table times critical appends alone, the price of that guarantee.

`--signed`: the recorder's writer signs with a fresh Ed25519 key (a `chain_signed` record, one signature, at
each critical event and at each group commit), as `--signing-key` makes it.

Usage: python bench/append.py [--events N] [--signed]
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mlperf_logging import mllog

from recorder.signing import generate, load_signer
from recorder.store.catalogue import critical_kinds
from recorder.store.log import LogWriter
from recorder.store.run import RunDir

CORPUS_LOG = Path(__file__).resolve().parents[2] / "shared/corpus/qwen35_397b_grpo_rcp/GBS256/seed_1.out"
KIND_OF = {
    "tracked_stats": "step_metrics",
    "eval_accuracy": "eval_result",
    "run_start": "run_start",
    "run_stop": "train_stop",
    "init_start": "init_start",
    "init_stop": "init_stop",
    "block_start": "block_start",
    "block_stop": "block_stop",
    "eval_start": "eval_start",
    "eval_stop": "eval_stop",
}


def workload() -> list[dict]:
    lines = [re.sub(r"^.*?:::MLLOG ", "", raw) for raw in CORPUS_LOG.read_text().splitlines() if ":::MLLOG" in raw]
    return [json.loads(line) for line in lines]


def percentiles(samples_ns: list[int]) -> tuple[float, float, float]:
    """(mean, p50, p99) in microseconds."""
    q = statistics.quantiles(samples_ns, n=100)
    return statistics.fmean(samples_ns) / 1e3, q[49] / 1e3, q[98] / 1e3


def time_each(calls: list[Callable[[], object]]) -> list[int]:
    out = []
    for call in calls:
        t = time.perf_counter_ns()
        call()
        out.append(time.perf_counter_ns() - t)
    return out


def mllog_calls(lines: list[dict], path: Path) -> tuple[list[Callable[[], object]], Callable[[], None]]:
    logger = logging.getLogger("bench-mllog")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    handler = logging.FileHandler(path)
    logger.addHandler(handler)
    mllog.config(logger=logger)
    ml = mllog.get_mllogger()
    calls: list[Callable[[], object]] = []
    for m in lines:
        meta = {k: v for k, v in m["metadata"].items() if k not in ("file", "lineno")}
        fn = {"INTERVAL_START": ml.start, "INTERVAL_END": ml.end}.get(m["event_type"], ml.event)
        calls.append(lambda fn=fn, m=m, meta=meta: fn(key=m["key"], value=m["value"], metadata=meta))

    def close() -> None:
        handler.close()
        logger.removeHandler(handler)

    return calls, close


def recorder_calls(lines: list[dict], writer: LogWriter) -> list[Callable[[], object]]:
    calls: list[Callable[[], object]] = []
    for m in lines:
        kind = KIND_OF.get(m["key"], "mllog_config")
        meta = m["metadata"]
        kw = dict(step=meta.get("step"), samples_count=meta.get("samples_count"))
        if kind == "mllog_config":
            kw.update(key=m["key"], value=m["value"])
        elif kind == "eval_result":
            kw.update(key="accuracy", value=m["value"])
        elif kind == "step_metrics":
            kw.update(data=m["value"])
        calls.append(lambda kind=kind, kw=kw: writer.append(kind, **kw))
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--critical", type=int, default=500)
    parser.add_argument("--signed", action="store_true", help="sign the recorder's segment with a fresh key")
    args = parser.parse_args()
    base = workload()
    lines = (base * (args.events // len(base) + 1))[: args.events]
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        ml_calls, ml_close = mllog_calls(lines, Path(tmp) / "mllog.txt")
        signer = None
        if args.signed:
            generate(Path(tmp) / "key")
            signer = load_signer(Path(tmp) / "key")
        writer = LogWriter(RunDir.create(tmp, "bench"), "bench", signer=signer)
        rec_calls = recorder_calls(lines, writer)
        ml_ns, rec_ns = [], []
        for _ in range(2):  # interleave rounds so both see the same machine noise
            half = len(lines) // 2
            ml_ns += time_each(ml_calls[:half])
            rec_ns += time_each(rec_calls[:half])
            rec_ns += time_each(rec_calls[half:])
            ml_ns += time_each(ml_calls[half:])
        critical = time_each([lambda i=i: writer.append("weight_update", step=i) for i in range(args.critical)])
        writer.close()
        ml_close()
    is_critical = [KIND_OF.get(m["key"]) in critical_kinds() for m in lines] * 2
    critical_share = sum(is_critical) // 2
    rec_plain = [ns for ns, crit in zip(rec_ns, is_critical, strict=False) if not crit]
    ml_plain = [ns for ns, crit in zip(ml_ns, is_critical, strict=False) if not crit]
    print(
        f"workload: {CORPUS_LOG.name} lines repeated to {len(rec_ns) // 2} events per round, 2 rounds; "
        f"{critical_share} of {len(lines)} are critical kinds" + ("; the recorder signs" if args.signed else "")
    )
    print(f"{'logger':<34}{'events/s':>10}{'mean us':>10}{'p50 us':>9}{'p99 us':>9}")
    rows = {
        "mllog (file, no fsync)": ml_ns,
        "recorder (default durability)": rec_ns,
        "mllog, same lines minus critical": ml_plain,
        "recorder, non-critical kinds": rec_plain,
        "recorder, critical only (fsync)": critical,
    }
    for name, ns in rows.items():
        mean, p50, p99 = percentiles(ns)
        print(f"{name:<34}{1e6 / mean:>10.0f}{mean:>10.1f}{p50:>9.1f}{p99:>9.1f}")
    ratio = statistics.fmean(rec_ns) / statistics.fmean(ml_ns)
    p50_ratio = percentiles(rec_ns)[1] / percentiles(ml_ns)[1]
    plain_ratio = statistics.fmean(rec_plain) / statistics.fmean(ml_plain)
    print(
        f"ratio recorder/mllog: mean {ratio:.2f}, p50 {p50_ratio:.2f}, non-critical mean {plain_ratio:.2f} "
        "(target <= 1.00; critical kinds pay an fsync that mllog never does)"
    )


if __name__ == "__main__":
    main()
