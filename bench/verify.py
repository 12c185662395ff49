"""`recorder verify` on one large segment: MB/s and peak RSS, against reading the same file with `cat`.

Writes a segment of about `--mb` megabytes (events of ~1 MB of `step_metrics` data) with the real
LogWriter, then verifies it in a fresh process (so the peak RSS is verify's own) and prints throughput and
peak RSS. The peer is reading the file once (`cat > /dev/null`), measured in the same run.

    python bench/verify.py --mb 1024
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import resource, sys, time
from recorder.verify import verify_run
t = time.perf_counter()
report = verify_run(sys.argv[1])
s = time.perf_counter() - t
assert report.ok, report.problems[:3]
print(s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def record(root: Path, mb: int) -> Path:
    from recorder.store.log import LogWriter
    from recorder.store.run import RunDir

    run = RunDir.create(root, "big")
    blob = "x" * (1 << 20)
    with LogWriter(run, "trainer") as w:
        for step in range(mb):
            w.append("step_metrics", step=step, samples_count=step, data={"extra": {"blob": blob}})
    return run.path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="segment size in MiB (default 1024)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = record(Path(tmp), args.mb)
        size = sum(p.stat().st_size for p in (run / "events").iterdir())
        t = time.perf_counter()
        subprocess.run(["cat", str(next((run / "events").iterdir()))], stdout=subprocess.DEVNULL, check=True)
        cat_s = time.perf_counter() - t
        out = subprocess.run([sys.executable, "-c", CHILD, str(run)], capture_output=True, text=True, check=True)
        verify_s, rss_mb = map(float, out.stdout.split())
    mb = size / 2**20
    print(f"segment {mb:.0f} MiB: verify {mb / verify_s:.0f} MiB/s ({verify_s:.1f} s), peak RSS {rss_mb:.0f} MiB")
    print(f"peer: cat {mb / cat_s:.0f} MiB/s; verify/cat time ratio {verify_s / cat_s:.1f}")


if __name__ == "__main__":
    main()
