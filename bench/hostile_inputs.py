"""Hostile inputs that once hung a command or took its memory: each must be refused with one `error:` line,
promptly and in little memory. For each, the refusing command's wall time and its own peak RSS (through
bench/replay_memory.py's launcher: a child's peak, not this process's), its exit status and its error line.

Each input is built from an honest one by the project's own builders (the tests' NeMo-RL and FSDP2 layouts),
then damaged: a FIFO among a DCP snapshot's shards and among Megatron weights, a symlink loop among Megatron
weights, a 2 GB sparse `final_meta.json`, a `config.yaml` of a million `[`, and a `recorder query` that builds
a list of 10**8 numbers (under `--memory-limit 256MB` and `--timeout 5`). A command still running after
`--limit` seconds is killed and reported as HUNG.

    python bench/hostile_inputs.py            # every case
    python bench/hostile_inputs.py --only fifo-dcp-shard
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

from bench.replay_memory import PEAK  # noqa: E402

RECORDER = [sys.executable, "-m", "recorder.cli"]
GBS = 256
# the launcher of bench/replay_memory.py, with a time limit: the command is killed past it
LAUNCH = (
    "import resource, subprocess, sys\n"
    "try:\n"
    "    code = subprocess.run(sys.argv[2:], timeout=float(sys.argv[1])).returncode\n"
    "except subprocess.TimeoutExpired:\n"
    "    code = 'HUNG'\n"
    f"print('\\n{PEAK}', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)\n"
)


def _snapshots(where: Path) -> Path:
    from tests.formats.test_dcp_import import write_snapshots

    return write_snapshots(where / "job")


def _mcore(where: Path) -> Path:
    from tests.adoption import nemo_layout
    from tests.evaluator import nemo_run

    series = where / "checkpoints"
    for step in (18, 19):
        nemo_layout.write_checkpoint(series, step, nemo_run.update_ms(step))
    return series


def _weights(series: Path) -> Path:
    return series / "step_18" / "policy" / "weights" / "iter_0000000"


def fifo_dcp_shard(where: Path) -> list[str]:
    series = _snapshots(where)
    os.mkfifo(series / "snapshots" / "step_18" / "__9_0.distcp")
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r"), "--global-batch-size", str(GBS)]


def fifo_mcore_weight(where: Path) -> list[str]:
    series = _mcore(where)
    os.mkfifo(_weights(series) / "__9_0.distcp")
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r")]


def symlink_loop_mcore(where: Path) -> list[str]:
    series = _mcore(where)
    os.symlink(".", _weights(series) / "loop")
    os.symlink("a", _weights(series) / "b")
    os.symlink("b", _weights(series) / "a")
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r")]


def sparse_final_meta(where: Path) -> list[str]:
    from tests.formats.test_dcp_import import write_archives

    series = write_archives(where / "archives", where / "job")
    meta = series / "fsdp2_epoch_1" / "final_meta.json"
    with open(meta, "r+b") as f:  # its JSON, then 2 GB of holes: the file system stores none of them
        f.seek(2 * 2**30)
        f.write(b" ")
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r"), "--global-batch-size", str(GBS)]


def deep_config_yaml(where: Path) -> list[str]:
    series = _mcore(where)
    (series / "step_18" / "config.yaml").write_text("[" * 1_000_000)
    return ["import-checkpoints", str(series), "--into", str(where / "runs" / "r")]


def query_list_bomb(where: Path) -> list[str]:
    from replay.synthetic import record_worked_example

    record_worked_example(where / "runs")
    sql = "SELECT list_value(range(100000000))"
    return ["query", "--root", str(where / "runs"), sql, "--timeout", "5", "--memory-limit", "256MB"]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "fifo-dcp-shard": fifo_dcp_shard,
    "fifo-mcore-weight": fifo_mcore_weight,
    "symlink-loop-mcore": symlink_loop_mcore,
    "sparse-final-meta": sparse_final_meta,
    "deep-config-yaml": deep_config_yaml,
    "query-list-bomb": query_list_bomb,
}


def measured(args: list[str], limit_s: float) -> tuple[float, float, str, str]:
    """Run `recorder ARGS` alone, killed after `limit_s`: wall seconds, peak RSS (MiB), exit status, output."""
    with tempfile.TemporaryFile("w+") as out:
        t = time.perf_counter()
        launch = [sys.executable, "-c", LAUNCH, str(limit_s), *RECORDER, *args]
        subprocess.run(launch, stdout=out, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
        seconds = time.perf_counter() - t
        out.seek(0)
        text, _, trailer = out.read().rpartition(f"\n{PEAK} ")
    kib, code = trailer.split()
    return seconds, int(kib) / 1024, code, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CASES), action="append", help="one case (repeatable)")
    parser.add_argument("--limit", type=float, default=60.0, help="kill a command after this many seconds")
    args = parser.parse_args()
    rows = []
    for name in args.only or CASES:
        with tempfile.TemporaryDirectory() as tmp:
            command = CASES[name](Path(tmp))
            seconds, rss, code, text = measured(command, args.limit)
        errors = [line for line in text.splitlines() if line.startswith("error:")]
        rows.append({"case": name, "seconds": round(seconds, 2), "peak_rss_mib": round(rss), "exit": code})
        print(f"{name:20} {seconds:7.2f} s {rss:7.0f} MiB  exit {code:>4}  {len(errors)} error line(s)")
        for line in errors or text.strip().splitlines()[-3:]:
            print(f"    {line[:300]}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
