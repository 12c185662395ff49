"""Hostile inputs that once hung a command or took its memory: each must be refused with one `error:` line,
promptly and in little memory. For each, the refusing command's wall time and its own peak RSS (through
bench/replay_memory.py's launcher: a child's peak, not this process's), its exit status and its error line.

Each input is built from an honest one by the project's own builders (the tests' NeMo-RL and FSDP2 layouts),
then damaged: a FIFO among a DCP snapshot's shards and among Megatron weights, a symlink loop among Megatron
weights, a 2 GB sparse `final_meta.json`, a `config.yaml` of a million `[`, one of 16 MiB of flow lists,
1,500 nested folders under a checkpoint (`import-checkpoints` and `collect`), and a `recorder query` that
builds a list of 10**8 numbers (under `--memory-limit 256MB`, `256M` and `256 megabytes`, and `--timeout 5`;
`-1` is refused); and `recorder zero-shot` of the golden team's archive with a NaN or 1e300
`--holdout-max-gap`, a `pyproject.toml` declaration nested 5,000 deep, a `tensorboard_scalars.json` of 200,000
`[` or 2 GB sparse, a FIFO named like a TensorBoard event file, a 15 MiB `all_config.yaml`, `seq_len: 0`, and
`collect` with RECORDER_TASK_PINS naming a FIFO or /dev/zero. A command still running after `--limit` seconds is killed and reported as HUNG. The
query's peer, measured beside it: the same command on the same history reading every event.

Work that must grow no faster than its input is measured at two sizes (`--scaling`): the DCP chunk-overlap
check on a staircase of 8,000 and 40,000 chunks (every chunk runs to the end of dim 0: a sweep that kept them
all compared each with every other), and `recorder import` and `replay` of a real reference log repeated to
12,500 and 50,000 lines (`--lines`; 800,000 is the 233 MB log) joined by CR alone, with the CPU seconds per
million lines. Each row prints the load average beside it: on shared cores,
CPU seconds (user + sys) are the steadier figure.

    python bench/hostile_inputs.py            # every case
    python bench/hostile_inputs.py --only fifo-dcp-shard
    python bench/hostile_inputs.py --scaling  # the scaling cases only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE.parent)]

from bench.replay_memory import PEAK  # noqa: E402
from tests.kit.hostile_inputs import CASES, long_mllog, query_honest, remove_tree  # noqa: E402

PEERS = {"query-list-bomb": query_honest}  # the same command on honest input, measured beside the case

RECORDER = [sys.executable, "-m", "recorder.cli"]
# the launcher of bench/replay_memory.py, with a time limit: the command is killed past it
LAUNCH = (
    "import resource, subprocess, sys\n"
    "try:\n"
    "    code = subprocess.run(sys.argv[2:], timeout=float(sys.argv[1])).returncode\n"
    "except subprocess.TimeoutExpired:\n"
    "    code = 'HUNG'\n"
    "use = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    f"print('\\n{PEAK}', use.ru_maxrss, code, use.ru_utime + use.ru_stime)\n"
)
CPU: dict[str, float] = {}  # "last": the CPU seconds (user + sys) of the command measured last


def measured(args: list[str], limit_s: float, argv: list[str] = RECORDER) -> tuple[float, float, str, str]:
    """Run `recorder ARGS` (or `argv + ARGS`) alone, killed after `limit_s`: wall seconds, peak RSS (MiB),
    exit status, output. Its CPU seconds are left in CPU["last"]. ARGS may start with `env NAME=VALUE...`:
    the variables the command is run with."""
    if args[:1] == ["env"]:
        settings = [a for a in args[1:] if "=" in a and a.split("=", 1)[0].isupper()]
        argv, args = ["env", *settings, *argv], args[1 + len(settings) :]
    with tempfile.TemporaryFile("w+") as out:
        t = time.perf_counter()
        launch = [sys.executable, "-c", LAUNCH, str(limit_s), *argv, *args]
        subprocess.run(launch, stdout=out, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL)
        seconds = time.perf_counter() - t
        out.seek(0)
        text, _, trailer = out.read().rpartition(f"\n{PEAK} ")
    kib, code, cpu = trailer.split()
    CPU["last"] = float(cpu)
    return seconds, int(kib) / 1024, code, text


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


CHUNKS = (
    "import sys, time\n"
    "from tests.kit.hostile_inputs import staircase_chunks\n"
    "from recorder.checkpoints.torch_dcp.chunk_cover import check_cover\n"
    "size, chunks = staircase_chunks(int(sys.argv[1]) // 2)\n"
    "t = time.perf_counter(); check_cover('.metadata', 'w', size, chunks)\n"
    "print(len(chunks), 'chunks checked in', round(time.perf_counter() - t, 3), 's')\n"
)


def scaling(limit_s: float, sizes: tuple[int, ...] = (12_500, 50_000)) -> list[dict[str, object]]:
    """The chunk check at 8,000 and 40,000 chunks; import and replay of a CR-joined log at two sizes (`sizes`
    lines; 800,000 lines is the 233 MB log): wall and CPU seconds, CPU seconds per million lines (linear work
    keeps it level across sizes), peak RSS."""
    rows: list[dict[str, object]] = []
    env_argv = [sys.executable, "-c", CHUNKS]
    for n in (8_000, 40_000):
        seconds, rss, code, text = measured([str(n)], limit_s, env_argv)
        rows.append({"case": f"chunk-cover-{n}", "seconds": round(seconds, 2), "cpu": CPU["last"], "rss": rss})
        print(f"chunk-cover {n:>7,} {seconds:7.2f} s {CPU['last']:7.2f} CPU s {rss:6.0f} MiB  exit {code}  {load()}")
    for lines in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            log = long_mllog(Path(tmp), lines)
            root = str(Path(tmp) / "runs")
            for verb, args in (("import", [str(log), "--root", root, "--run-id", "r"]), ("replay", [f"{root}/r"])):
                seconds, rss, code, text = measured([verb, *args], limit_s)
                per_million = CPU["last"] / lines * 1e6
                rows.append(
                    {"case": f"mllog-{verb}-{lines}", "seconds": round(seconds, 2), "cpu": CPU["last"], "rss": rss,
                     "cpu_s_per_million_lines": round(per_million, 1)}
                )  # fmt: skip
                print(
                    f"mllog {verb:6} {lines:>7,} {seconds:7.2f} s {CPU['last']:7.2f} CPU s {rss:6.0f} MiB  "
                    f"{per_million:7.1f} CPU s per million lines  exit {code}  {load()}"
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CASES), action="append", help="one case (repeatable)")
    parser.add_argument("--limit", type=float, default=60.0, help="kill a command after this many seconds")
    parser.add_argument("--scaling", action="store_true", help="only the cases measured at two sizes")
    parser.add_argument(
        "--lines", default="12500,50000", help="the mllog sizes, in lines (800000: the 233 MB log), comma-separated"
    )
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = str(_HERE.parent)  # the chunk check's child imports the tests' kit
    rows = []
    for name in [] if args.scaling else args.only or CASES:
        with tempfile.TemporaryDirectory() as tmp:
            command = CASES[name](Path(tmp))
            seconds, rss, code, text = measured(command, args.limit)
            for made in Path(tmp).iterdir():
                remove_tree(made)  # a tree nested past what shutil.rmtree's recursion removes
        errors = [line for line in text.splitlines() if line.startswith("error:")]
        rows.append(
            {"case": name, "seconds": round(seconds, 2), "cpu": CPU["last"], "peak_rss_mib": round(rss), "exit": code}
        )
        print(
            f"{name:20} {seconds:7.2f} s {CPU['last']:6.2f} CPU s {rss:7.0f} MiB  exit {code:>4}  "
            f"{len(errors)} error line(s)  {load()}"
        )
        for line in errors or text.strip().splitlines()[-3:]:
            print(f"    {line[:300]}")
        if name in PEERS:
            with tempfile.TemporaryDirectory() as tmp:
                seconds, peer_rss, code, _ = measured(PEERS[name](Path(tmp)), args.limit)
            rows[-1] |= {"peer_peak_rss_mib": round(peer_rss), "over_peer_mib": round(rss - peer_rss)}
            print(f"{'  honest peer':20} {seconds:7.2f} s {peer_rss:7.0f} MiB  exit {code:>4}  (the case's peak is "
                  f"{rss - peer_rss:,.0f} MiB above it)")  # fmt: skip
    if args.scaling or not args.only:
        rows += scaling(max(args.limit, 600.0), tuple(int(n) for n in args.lines.split(",")))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
