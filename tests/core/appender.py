"""A writer process for crash and concurrency tests: appends events and reports each seq after append returns.

Usage: python -m tests.core.appender RUN_DIR WRITER COUNT
Prints "ready" once the segment is open, then one seq per line after each append returned.
"""

import sys

from recorder.store.catalogue import may_write
from recorder.store.log import LogWriter


def main() -> None:
    run_dir, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    w = LogWriter(run_dir, writer)
    print("ready", flush=True)
    # the kinds this writer may record (verify refuses any other: rule kind-writer)
    kinds = [
        k for k in ("step_metrics", "weight_update", "checkpoint_committed", "eval_result") if may_write(writer, k)
    ]
    for i in range(count):
        e = w.append(
            kinds[i % len(kinds)],
            step=i,
            samples_count=256 * i,
            key="accuracy",
            value=i / 7,
            data={"payload": "x" * (i % 300), "i": i},
        )
        print(e.seq, flush=True)
    w.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
