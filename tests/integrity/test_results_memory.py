"""verify reads a results.json within a memory bound: its samples are folded one at a time, never held.

The file is a consistent one (its samples add up to its tally and score), so verify reads it to the end and
finds the run intact. Peak RSS is measured in a fresh process whose only child is `recorder verify`
(getrusage of its children), so no earlier process of the test session is counted.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from recorder.verify.facts.evidence import RESULTS_LIMIT
from tests.integrity.forge import evaluator_segment, rows, write
from tests.kit.synthetic import record_run

MB = 1 << 20
_PEAK = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.returncode); "
    "sys.stderr.write(done.stdout + done.stderr)"
)


def _big_results(run: Path, size: int) -> None:
    """Replace the step-19 evidence with a consistent results.json of about `size` bytes (the evaluator's
    per-sample rows: three sha256s, a seed, a reward, an outcome), and point eval_result at it. Each of the
    run's 251 tasks is sampled more than k times, as pass@k's unbiased estimate samples them."""
    segment = evaluator_segment(run)
    events = rows(segment)
    results = [e for e in events if e["kind"] == "eval_result" and e["step"] == 19]
    path = run / results[0]["data"]["results"]
    n, k, passed = 251, 4, 181
    h = "ab" * 32
    row = {"task": n, "sample": 99_999, "seed": 1_000_003 * n, "reward": 0.0, "correct": False}
    row_bytes = len(json.dumps({**row, "prompt_sha256": h, "completion_sha256": h, "target_sha256": h})) + 1
    per_task = max(k + 1, (size - 1000) // (row_bytes * n))  # the longest row: the file stays under `size`
    digest = hashlib.sha256()
    with open(path, "wb") as f:

        def put(text: str) -> None:
            data = text.encode()
            digest.update(data)
            f.write(data)

        head = {"run_id": "r", "step": 19, "score": 0.72, "n_tasks": n, "k": k, "tasks_passed": passed}
        put(json.dumps(head)[:-1] + ', "samples": [')
        for task in range(n):
            put(
                ",".join(
                    json.dumps(
                        {
                            "task": task,
                            "sample": j,
                            "seed": 1_000_003 * task + j,
                            "reward": 1.0 if task < passed and j == 0 else 0.0,
                            "correct": task < passed and j == 0,
                            "prompt_sha256": h,
                            "completion_sha256": h,
                            "target_sha256": h,
                        }
                    )
                    for j in range(per_task)
                )
                + ("," if task < n - 1 else "")
            )
        put("]}")
    for result in results:
        result["data"] = {**result["data"], "results_sha256": digest.hexdigest()}
    write(segment, events)


def _verify_peak_kib(run: Path) -> int:
    exe = str(Path(sys.executable).with_name("recorder"))
    done = subprocess.run([sys.executable, "-c", _PEAK, exe, "verify", str(run)], capture_output=True, text=True)
    peak, code = done.stdout.split()
    assert code == "0" and "verify: intact" in done.stderr, done.stderr
    return int(peak)


def _run(root: Path, size: int) -> Path:
    run = record_run(root, "r", gbs=256, steps=20, evals=[(19, 0.72)], closed=True).path
    _big_results(run, size)
    return run


def test_verify_memory_does_not_grow_with_the_results_file(tmp_path: Path) -> None:
    """From 4 MB to 36 MB of samples, verify's peak grows by far less than the file (json.loads of the
    whole file would grow it about twenty-five times as much)."""
    small = _verify_peak_kib(_run(tmp_path / "small", 4 * MB))
    large = _verify_peak_kib(_run(tmp_path / "large", 36 * MB))
    assert (large - small) * 1024 < 0.5 * 32 * MB, (small, large)


@pytest.mark.slow
def test_verify_of_a_512_mb_results_file_stays_under_1_gb(tmp_path: Path) -> None:
    run = _run(tmp_path, RESULTS_LIMIT)  # 512 MiB: the largest results.json verify reads
    (results,) = (run / "derived" / "evals").rglob("*.json")
    assert results.stat().st_size > RESULTS_LIMIT - 4 * MB
    assert _verify_peak_kib(run) * 1024 < 1 << 30
