"""Learning is real, per CPU kernel set: `recorder train` seeds under each float order torch offers here.

Each run is its own `recorder train` process, started with a kernel set's ATEN_CPU_CAPABILITY and MKL_CBWR as
another CPU would pick them, and RECORDER_CPU_KERNELS as `--cpu-kernels` says (auto, the default: the tiny
model pins, which overrides both; native: the set's own kernels). A scoring process under the same
environment then scores the warm-up init and every checkpoint with the evaluator's pass@k (salt "eval", as
`recorder eval` samples). One JSON line per run is appended to
`--out` as it ends, so that nothing measured is lost.

    nice -n 19 python -m bench.learning --kernels avx512,avx2,default --seeds 0-4 --out learning.jsonl
    nice -n 19 python -m bench.learning --kernels avx512 --cpu-kernels native   # the CPU's own float order
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# What a CPU of each kind makes torch and MKL pick (MKL follows the CPU family: AVX2 paths on an AMD EPYC
# even where it has AVX-512, AVX-512 ones on a Xeon).
KERNEL_SETS: Mapping[str, Mapping[str, str]] = {
    "avx512": {"ATEN_CPU_CAPABILITY": "avx512", "MKL_CBWR": "AVX512"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"},
    "default": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"},
}
REPO = Path(__file__).resolve().parents[1]


def kernel_env(kernels: str, cpu_kernels: str = "auto") -> dict[str, str]:
    """This process's environment with a kernel set's variables and RECORDER_CPU_KERNELS=`cpu_kernels`."""
    return {**os.environ, **KERNEL_SETS[kernels], "OMP_NUM_THREADS": "1", "RECORDER_CPU_KERNELS": cpu_kernels}


# A vectorised op of ATen's own kernels (softmax) and an MKL GEMM: what a run computes with first.
_KERNEL_CHECK = (
    "import torch; x = torch.randn(64, 64); (torch.softmax(x, -1) @ x).sum().item(); "
    "print(torch.backends.cpu.get_cpu_capability())"
)


def refusal(kernels: str) -> str | None:
    """Why this CPU cannot run `kernels`, or None when it can. Torch trusts what the CPU reports: a virtual
    machine can announce AVX-512 that it does not execute, and the first vectorised op then dies of an illegal
    instruction; a CPU without the set makes torch take a lower one."""
    env = {**os.environ, **KERNEL_SETS[kernels]}
    done = subprocess.run([sys.executable, "-c", _KERNEL_CHECK], env=env, capture_output=True, text=True)
    if done.returncode == -signal.SIGILL:
        names = " ".join(f"{k}={v}" for k, v in KERNEL_SETS[kernels].items())
        return f"the {kernels} kernel set dies of an illegal instruction (SIGILL) here under {names}"
    if done.returncode != 0:
        raise RuntimeError(f"{kernels} kernel check exited {done.returncode}: {done.stderr.strip()}")
    took = done.stdout.strip()
    return None if took.lower() == kernels else f"this CPU lacks the {kernels} kernel set (torch takes {took})"


def offered(kernels: str) -> bool:
    """Whether this CPU runs `kernels` (see `refusal` for why it may not)."""
    return refusal(kernels) is None


def train_and_score(
    kernels: str, seed: int, root: Path, cache_dir: Path, *, cpu_kernels: str = "auto", sets: list[str] | None = None
) -> dict[str, Any]:
    """One `recorder train` run of `seed` under `kernels`, then its init and checkpoints scored likewise."""
    env = kernel_env(kernels, cpu_kernels)
    run_id = f"{kernels}-{cpu_kernels}-seed{seed}"
    argv = [sys.executable, "-m", "recorder.cli", "train", "--root", str(root), "--run-id", run_id]
    # each run trains its own warm-up (in `cache_dir`), never the init shipped for the default seed: what is
    # measured is what this CPU's float order makes of every seed
    for item in [f"seed={seed}", f"warmup.cache_dir={cache_dir}", "warmup.shipped=false", *(sets or [])]:
        argv += ["--set", item]
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - t0
    scoring = [sys.executable, "-m", "bench.learning", "--score", str(root / run_id)]
    done = subprocess.run(scoring, env=env, check=True, capture_output=True, text=True, cwd=REPO)
    scores = json.loads(done.stdout.strip().splitlines()[-1])
    return {"kernels": kernels, "cpu_kernels": cpu_kernels, "seed": seed, "train_wall_s": round(wall, 1), **scores}


def score_run(run_path: Path) -> dict[str, Any]:
    """Scores of a run's warm-up init and checkpoints in the run's float order (a pinned run pinned, as the
    evaluator does, before torch loads), with the digests of the weights scored."""
    from recorder.store.reader import read_run
    from trainer.policy.kernels import pin_cpu_kernels, recorded_pinned

    events = read_run(run_path).events
    opened = next(e for e in events if e.kind == "run_opened")
    pin_cpu_kernels(recorded_pinned(opened.data["provenance"]))
    from safetensors.torch import load_file

    from recorder.checkpoints.recorder_format import load_checkpoint
    from trainer.policy.task import validation_tasks
    from trainer.warmup import pass_at_k

    def score(model: Any, tok: Any) -> float:
        return pass_at_k(model, tok, validation_tasks(), k=4, temperature=0.1, top_p=0.95, max_new_tokens=5)

    warmup = next(e for e in events if e.kind == "init_start").data["warmup"]
    checkpoints = sorted(
        (e.step, run_path / e.data["path"]) for e in events if e.kind == "checkpoint_committed" and e.step is not None
    )
    model, tok = load_checkpoint(checkpoints[0][1])
    init_weights = Path(warmup["cache_path"]) / "model.safetensors"
    model.load_state_dict(load_file(str(init_weights)))
    steps = {step: score(*load_checkpoint(path)) for step, path in checkpoints}
    digests = {step: _sha256(path / "model.safetensors") for step, path in checkpoints}
    return {
        "init": score(model, tok),
        "steps": steps,
        "warmup_batches": warmup["batches"],
        "dev": warmup["dev_accuracy"],
        "warmup_cached": warmup["cached"],
        "init_sha256": _sha256(init_weights),
        "sha256": digests,
        "recorded_kernels": opened.data["provenance"].get("cpu_kernels"),
    }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _seeds(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", default="avx512,avx2,default", help="kernel sets, comma-separated")
    parser.add_argument("--seeds", default="0-4", help="N or N-M")
    parser.add_argument(
        "--cpu-kernels", default="auto", choices=["auto", "native", "pinned"], help="RECORDER_CPU_KERNELS"
    )
    parser.add_argument("--root", type=Path, default=Path("/tmp/bench-learning"), help="where the runs go")
    parser.add_argument("--cache", type=Path, help="warm-up cache (default: one per kernel set under --root)")
    parser.add_argument("--set", dest="sets", action="append", default=[], help="more `recorder train --set`s")
    parser.add_argument("--out", type=Path, default=Path("learning.jsonl"), help="JSON lines, one per run")
    parser.add_argument("--score", type=Path, help=argparse.SUPPRESS)  # the scoring process of one run
    args = parser.parse_args()
    if args.score is not None:
        print(json.dumps(score_run(args.score)))
        return
    for kernels in args.kernels.split(","):
        why = refusal(kernels)
        if why is not None:
            print(f"{kernels}: skipped: {why}", flush=True)
            continue
        cache = args.cache or args.root / f"warmup-{kernels}"
        for seed in _seeds(args.seeds):
            row = train_and_score(kernels, seed, args.root, cache, cpu_kernels=args.cpu_kernels, sets=args.sets)
            with args.out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
