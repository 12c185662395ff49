"""`recorder import-checkpoints` and `recorder export-hf` on a step at Qwen3.5-397B-A17B's real counts, against
reading the same bytes with the real tools, in one run.

The step is the census series that the real megatron-core writes (tests/fixtures/make_mcore.py `census`: 60
layers, 512 experts, vocabulary 248,320, hidden size 16; about 155,000 tensor chunks, a 43 MB `.metadata`
and two 128 MB shards): `--series DIR` names one already written (the folder holding `census/`,
`census.hf-config/` and `tokenizer/`), else it is written into a temporary folder with `.venv-mcore`'s
python (`bash .ci/mcore`; minutes).

Each measurement runs in a child process of its own, its wall seconds, CPU seconds (user + system) and peak
RSS read from the child's own resource usage (`os.wait4`):

- import: `recorder import-checkpoints SERIES --into RUN --model-config ... --tokenizer ...` (a new run each
  round): the step read, hashed, loaded into its model and fingerprinted;
- export: `recorder export-hf STEP -o OUT ...` (a new folder each round);
- the peer: `sha256sum` over every file of the step, plus torch DCP's own
  `FileSystemReader(ITERATION).read_metadata()` (plain pickle) in a python of its own; its wall and CPU are
  the two together, its peak RSS the reader's.

The page cache is warmed by one untimed read first, so every measurement reads from memory. Rounds
alternate the three; the best of `--rounds` is kept. Prints each and the ratios the targets are stated in:
wall / the peer's wall (target <= 1.5) and peak RSS - the reader's peak (target <= 300 MB).

    python bench/census_import.py --series /tmp/census          # a series written before
    python bench/census_import.py --rounds 3                    # writes the series first
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDER = Path(sys.executable).parent / "recorder"
MCORE_PYTHON = ROOT / ".venv-mcore" / "bin" / "python"
ITERATION = Path("policy") / "weights" / "iter_0000000"
READ_METADATA = (
    "import sys; from torch.distributed.checkpoint import FileSystemReader; "
    "m = FileSystemReader(sys.argv[1]).read_metadata(); print(len(m.storage_data))"
)


@dataclass(frozen=True, slots=True)
class Usage:
    """One child process: wall and CPU seconds, peak RSS in MiB."""

    wall: float
    cpu: float
    rss_mib: float

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.wall + other.wall, self.cpu + other.cpu, max(self.rss_mib, other.rss_mib))


def measure(command: list[str]) -> Usage:
    """Runs `command` to its end; its own resource usage (never its siblings')."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    out, err = child.communicate()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"error: {' '.join(command)} exited {status}:\n{out.decode()[-2000:]}{err.decode()[-2000:]}")
    return Usage(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def write_series(out: Path) -> Path:
    """The census series written by the real megatron-core into `out` (minutes on a CPU)."""
    if not MCORE_PYTHON.is_file():
        raise SystemExit(f"error: {MCORE_PYTHON}: missing: run `bash .ci/mcore`, or pass --series DIR")
    script = ROOT / "tests" / "fixtures" / "make_mcore.py"
    command = [str(MCORE_PYTHON), "-m", "torch.distributed.run", "--nproc-per-node=1", str(script), "census", str(out)]
    subprocess.run(command, check=True, env=os.environ | {"OMP_NUM_THREADS": "1"}, capture_output=True)
    return out


def step_files(step: Path) -> list[str]:
    return sorted(str(f) for f in step.rglob("*") if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=Path, help="a folder make_mcore.py wrote the census into")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="census-bench-") as tmp:
        folder = args.series or write_series(Path(tmp) / "written")
        series = folder / "census"
        step = sorted(series.glob("step_*"))[-1]
        source = ["--model-config", str(folder / "census.hf-config"), "--tokenizer", str(folder / "tokenizer")]
        files = step_files(step)
        print(f"step {step}: {len(files)} files, {sum(os.path.getsize(f) for f in files) / 1e6:.0f} MB")
        print(f"cpu: {cpu_model()}, {os.cpu_count()} cpus; load average at start {os.getloadavg()}")
        peer_hash = ["sha256sum", *files]
        peer_read = [sys.executable, "-c", READ_METADATA, str(step / ITERATION)]
        measure(peer_hash)  # the page cache warmed: every round reads from memory
        best: dict[str, Usage] = {}
        for r in range(args.rounds):
            run, out = Path(tmp) / f"run{r}", Path(tmp) / f"hf{r}"
            commands = {
                "peer": [peer_hash, peer_read],
                "read_metadata": [peer_read],
                "import": [[str(RECORDER), "import-checkpoints", str(series), "--into", str(run), *source]],
                "export": [[str(RECORDER), "export-hf", str(step), "-o", str(out), *source]],
            }
            for name, parts in commands.items():
                got = measure(parts[0])
                for more in parts[1:]:
                    got = got + measure(more)
                if name not in best or got.wall < best[name].wall:
                    best[name] = got
            shutil.rmtree(run, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
        print(f"load average at end {os.getloadavg()}; best of {args.rounds} rounds")
        for name, u in best.items():
            print(f"{name:>14}: {u.wall:7.2f} s wall {u.cpu:7.2f} s CPU {u.rss_mib:7.0f} MiB peak RSS")
        peer, reader = best["peer"], best["read_metadata"]
        for name in ("import", "export"):
            u = best[name]
            print(
                f"{name}: {u.wall / peer.wall:.2f}x the peer's wall (target <= 1.5), "
                f"{u.cpu / peer.cpu:.2f}x its CPU, peak RSS {u.rss_mib - reader.rss_mib:+.0f} MiB over "
                "read_metadata's (target <= +300)"
            )


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").is_file() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


if __name__ == "__main__":
    main()
