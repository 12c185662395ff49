"""Checkpoints evaluated per minute with 1 worker (in process) and 2 workers (Ray actors), and the ratio.

    python bench/eval.py                 # trains the default run first (`recorder train`), then evaluates
    python bench/eval.py --run RUN_DIR   # an existing trained run
    python bench/eval.py --backends ...  # backends instead: ours against lm-eval's hf, vLLM against ours
                                         # (bench/eval_backends.py)

Each measurement evaluates every checkpoint of its own copy of the run (`--all`, the run's full eval
settings) and times the session; worker start-up (Ray actors, model import) is reported apart, since a long
evaluation amortizes it. Both sides are measured in the same process, on the same machine, one after the
other. On a machine with fewer free cores than workers the ratio says so: it is not a target.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evaluator.cluster.workers import LocalWorkers, Workers, start_workers
from evaluator.session import evaluate_run
from evaluator.settings import Options


def train_default(root: Path) -> Path:
    exe = shutil.which("recorder", path=str(Path(sys.executable).parent)) or "recorder"
    subprocess.run([exe, "train", "--root", str(root), "--run-id", "bench"], check=True)
    return root / "bench"


def completions(run: Path) -> dict[int, tuple[float, list[str]]]:
    """{step: (score, completion hashes)} from the session's results.json files."""
    out = {}
    for path in sorted((run / "derived" / "evals").glob("step_*/results.json")):
        doc = json.loads(path.read_text())
        out[doc["step"]] = (doc["score"], [x["completion_sha256"] for x in doc["samples"]])
    return out


def measure(run: Path, workers: int, batch_size: int, threads: int | None) -> tuple[int, float, float]:
    """(checkpoints scored, seconds evaluating, seconds starting workers)."""
    started: dict[str, float] = {}

    def factory(n: int, address: str | None) -> Workers:
        t = time.perf_counter()
        w = LocalWorkers(threads) if n == 1 else start_workers(n, address)  # type: ignore[arg-type]
        started["s"] = time.perf_counter() - t
        return w

    t0 = time.perf_counter()
    summary = evaluate_run(run, Options(all=True, workers=workers, batch_size=batch_size), workers_factory=factory)
    total = time.perf_counter() - t0
    scored = sum(o.status == "scored" for o in summary.outcomes)
    if summary.failures:
        raise SystemExit(f"evaluation failed: {summary.failures}")
    return scored, total - started.get("s", 0.0), started.get("s", 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="a trained run directory (default: train the default run)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of the in-process worker (default 1, as `recorder eval --workers 1` and "
        "each Ray worker; 0: torch's default)",
    )
    backends = parser.add_argument_group("--backends (bench/eval_backends.py)")
    backends.add_argument("--backends", action="store_true", help="compare backends instead of worker counts")
    backends.add_argument("--model", choices=("smollm2", "tiny"), default="smollm2")
    backends.add_argument("--task", default="math-word", help="a shipped spec's name or a spec file")
    backends.add_argument("--tasks", type=int, default=None, help="the spec's first N tasks only (default: all)")
    backends.add_argument(
        "--vllm-python", default=None, help="the python of a vLLM environment (e.g. .venv-vllm/bin/python)"
    )
    args = parser.parse_args()
    if args.backends:
        import eval_backends  # beside this file

        with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
            eval_backends.report(args, eval_backends.measure(args, Path(tmp) / "base"))
        return
    args.threads = args.threads or None
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        base = args.run or train_default(Path(tmp) / "train")
        rows, evidence = {}, {}
        for n in (1, 2):
            copy = Path(tmp) / f"w{n}" / base.name
            shutil.copytree(base, copy, ignore=shutil.ignore_patterns("derived"))
            for seg in (copy / "events").glob("evaluator-*.arrows"):
                seg.unlink()  # each side evaluates every checkpoint itself
            rows[n] = measure(copy, n, args.batch_size, args.threads)
            evidence[n] = completions(copy)
    print(
        f"run {base.name}: batch size {args.batch_size}, in-process worker with "
        f"{args.threads or 'default'} torch thread(s), Ray workers with 1 each"
    )
    for n, (count, seconds, startup) in rows.items():
        rate = 60 * count / seconds
        print(
            f"  workers={n} ({'in process' if n == 1 else 'Ray actors'}): {count} checkpoints in {seconds:.2f} s "
            f"= {rate:.2f} checkpoints/min (worker start-up {startup:.2f} s, not counted)"
        )
    r1 = rows[1][0] / rows[1][1]
    r2 = rows[2][0] / rows[2][1]
    print(f"  ratio 2 workers / 1 worker: {r2 / r1:.2f}x")
    same = evidence[1] == evidence[2]
    print(
        f"  scores {', '.join(f'{k}: {v[0]:.4f}' for k, v in sorted(evidence[1].items()))}; every completion "
        f"identical with 1 and 2 workers: {'yes' if same else 'NO'}"
    )
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
