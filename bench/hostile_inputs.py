"""Hostile inputs that once hung a command or took its memory: each must be refused with one `error:` line,
promptly and in little memory. For each, the refusing command's wall time and its own peak RSS (through
bench/replay_memory.py's launcher: a child's peak, not this process's), its exit status and its error line.

Each input is built from an honest one by the project's own builders (the tests' NeMo-RL and FSDP2 layouts),
then damaged: a FIFO among a DCP snapshot's shards and among Megatron weights, a symlink loop among Megatron
weights, a 2 GB sparse `final_meta.json`, a `config.yaml` of a million `[`, and a `recorder query` that builds
a list of 10**8 numbers (under `--memory-limit 256MB` and `--timeout 5`). A command still running after
`--limit` seconds is killed and reported as HUNG. The query's peer, measured beside it: the same command on
the same history reading every event.

    python bench/hostile_inputs.py            # every case
    python bench/hostile_inputs.py --only fifo-dcp-shard
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

from bench.replay_memory import PEAK  # noqa: E402
from tests.kit.hostile_inputs import CASES, query_honest, remove_tree  # noqa: E402

PEERS = {"query-list-bomb": query_honest}  # the same command on honest input, measured beside the case

RECORDER = [sys.executable, "-m", "recorder.cli"]
# the launcher of bench/replay_memory.py, with a time limit: the command is killed past it
LAUNCH = (
    "import resource, subprocess, sys\n"
    "try:\n"
    "    code = subprocess.run(sys.argv[2:], timeout=float(sys.argv[1])).returncode\n"
    "except subprocess.TimeoutExpired:\n"
    "    code = 'HUNG'\n"
    f"print('\\n{PEAK}', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)\n"
)


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
            for made in Path(tmp).iterdir():
                remove_tree(made)  # a tree nested past what shutil.rmtree's recursion removes
        errors = [line for line in text.splitlines() if line.startswith("error:")]
        rows.append({"case": name, "seconds": round(seconds, 2), "peak_rss_mib": round(rss), "exit": code})
        print(f"{name:20} {seconds:7.2f} s {rss:7.0f} MiB  exit {code:>4}  {len(errors)} error line(s)")
        for line in errors or text.strip().splitlines()[-3:]:
            print(f"    {line[:300]}")
        if name in PEERS:
            with tempfile.TemporaryDirectory() as tmp:
                seconds, peer_rss, code, _ = measured(PEERS[name](Path(tmp)), args.limit)
            rows[-1] |= {"peer_peak_rss_mib": round(peer_rss), "over_peer_mib": round(rss - peer_rss)}
            print(f"{'  honest peer':20} {seconds:7.2f} s {peer_rss:7.0f} MiB  exit {code:>4}  (the case's peak is "
                  f"{rss - peer_rss:,.0f} MiB above it)")  # fmt: skip
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
