"""Bench: what re-deriving a run's derived/scores.jsonl costs per event, the number behind
replay.scorekeeping.scores_check.RECHECK_EVENTS (the budget `recorder runs` and `recorder report` share).

    PYTHONPATH=. python bench/recheck.py [--events 30000] [--repeat 3]

Builds bench/replay.py's synthetic closed run (bench/report.py's builder, through the real log writer),
writes its scores with replay, then times what `recorder runs` does per run it re-derives: read the run's
events, re-derive the official row and compare it with the file. Prints CPU seconds (the fair number on a
shared machine) and events per CPU second, the median of --repeat, and what RECHECK_EVENTS costs at that
rate. Reported, no target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import report as builder  # bench/report.py: the synthetic run's builder

from recorder.store.reader import read_run
from replay.scorekeeping.scores import write_scores
from replay.scorekeeping.scores_check import RECHECK_EVENTS, recheck_shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = builder.build(Path(tmp), args.events)
        write_scores(run, check=False)
        rates = []
        for _ in range(args.repeat):
            c0 = time.process_time()
            events = read_run(run).events
            c1 = time.process_time()
            mismatch = recheck_shown(run, events, "official")
            c2 = time.process_time()
            assert mismatch is None, mismatch  # an honest file: the comparison ran to the end
            rates.append(len(events) / (c2 - c0))
            print(f"{len(events):,} events: read {c1 - c0:.2f} s CPU, re-derive and compare {c2 - c1:.2f} s CPU")
    rate = statistics.median(rates)
    print(f"median {rate:,.0f} events per CPU second; RECHECK_EVENTS {RECHECK_EVENTS:,}: {RECHECK_EVENTS / rate:.1f} s")


if __name__ == "__main__":
    main()
