"""`recorder --help` and refused command lines: CPU seconds (user + system) of each, median of N runs, against
`python -c pass` (the interpreter alone) and `python -c "import typer"` (the parser alone), measured in the
same run, interleaved. Prints the load average first: a busy machine inflates every number alike.

    python bench/startup.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

RECORDER = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    'python -c "import typer"': [sys.executable, "-c", "import typer"],
    "recorder --help": [RECORDER, "--help"],
    "recorder replay --interpretaton x": [RECORDER, "replay", "RUN", "--interpretaton", "x"],
    "recorder train --root /proc/nowhere": [RECORDER, "train", "--root", "/proc/nowhere"],
    "recorder verify /nonexistent": [RECORDER, "verify", "/nonexistent"],
}


def cpu_seconds(command: list[str]) -> float:
    """User + system CPU seconds of one run of `command` (its own, from the children's rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.runs):  # interleaved: a burst of load falls on every case alike
        for name, command in CASES.items():
            times[name].append(cpu_seconds(command))
    typer_s = statistics.median(times['python -c "import typer"'])
    print(f"| command | CPU s (median of {args.runs}) | / import typer |")
    print("|---|---|---|")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"| `{name}` | {median:.3f} | {median / typer_s:.2f} |")


if __name__ == "__main__":
    main()
