"""GPU performance bench: our GRPO step against TRL's, checkpoint overhead at every step, and the
physical limits of a save, all in one run on one model. Writes JSON lines (one record per measurement) to
RESULTS_DIR/gpu-<UTC time>.jsonl and prints a summary table.

    python bench/gpu_bench.py RESULTS_DIR                    # full shapes on the GPU (bench/gpu.sh runs this)
    python bench/gpu_bench.py RESULTS_DIR --tiny --device cpu  # small shapes, a few steps: the CPU dry run

Records (field "record"): "env"; "ours" (mode none/async/sync) and "trl" (step_s, completion_tokens_per_s,
loss, weights_changed, ...); "limits" (d2h and disk bandwidth, lower bounds on blocking save time);
"summary" (speedup of ours over TRL, checkpoint overheads against `none`). A part that fails writes a
record with "error" and the rest still runs, so one broken dependency costs one number, not the run. Each
part has a share of --budget-s: ours stops early at its share (steps < steps_planned), or is "skipped".
Targets: ours >= 2x TRL's step speed; async checkpointing at every step <= 2% of step time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--tiny", action="store_true", help="small shapes (the CPU dry run)")
    ap.add_argument("--device", default="auto", help="auto (cuda if available), cuda or cpu")
    ap.add_argument("--steps", type=int, default=None, help="timed steps per measurement (default 3; tiny 2)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first (allocator, kernels, caches)")
    ap.add_argument("--parts", default="limits,ours,trl", help="comma list of: limits, ours, trl")
    ap.add_argument("--modes", default="none,async,sync", help="our checkpoint modes to time")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=360.0,
        help="seconds for the timed parts, shared out in order: an our-trainer part stops after "
        "its share (one timed step at least) and a later one past its share is skipped",
    )
    ap.add_argument("--workdir", type=Path, default=None, help="checkpoints/probes go here (default: a temp dir)")
    args = ap.parse_args(argv)
    started = time.perf_counter()  # the budget counts imports and model builds too

    import torch
    from gpu_workload import FULL, TINY

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    shapes = TINY if args.tiny else FULL
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32  # bf16 matmuls on CPU are slow
    steps = args.steps if args.steps is not None else (2 if args.tiny else 3)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    out = args.results_dir / f"gpu-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}{'-tiny' if args.tiny else ''}.jsonl"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gpu-bench-"))
    parts = set(args.parts.split(","))
    records: list[dict[str, Any]] = []

    def emit(record: dict[str, Any]) -> None:
        records.append(record)
        with open(out, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        print(json.dumps(record, sort_keys=True), flush=True)

    common = {"device": device, "dtype": str(dtype).removeprefix("torch."), "tiny": args.tiny}
    emit({"record": "env", **common, **_env(device), "shapes": shapes.__dict__, "steps": steps, "warmup": args.warmup})
    nbytes = _param_bytes(shapes, dtype)
    if "limits" in parts:
        emit(_guarded("limits", common, lambda: _limits(nbytes, device, workdir)))
    # Most telling first (ours vs TRL), then the checkpoint modes: if the budget runs out, what is cut is the
    # least needed, and each record is already on disk when the next part starts.
    modes = args.modes.split(",")
    plan: list[tuple[str, str | None]] = [("ours", m) for m in modes if m == "none"] if "ours" in parts else []
    plan += [("trl", None)] if "trl" in parts else []
    plan += [("ours", m) for m in modes if m != "none"] if "ours" in parts else []
    # Each part's deadline is its share of the budget, cumulated, so time one part leaves flows to the next.
    # Our first part (the baseline) always runs one timed step; a later one whose deadline has passed is
    # skipped; TRL runs its steps regardless (it is the peer, and several times shorter on a GPU).
    first_ours = next((m for n, m in plan if n == "ours"), None)
    for i, (name, mode) in enumerate(plan):
        keys = {**common, **({"mode": mode} if mode else {})}
        deadline = started + args.budget_s * (i + 1) / len(plan)
        if name == "ours" and mode != first_ours and time.perf_counter() > deadline:
            emit(
                {
                    "record": name,
                    **keys,
                    "skipped": f"time budget: past this part's share of --budget-s "
                    f"{args.budget_s:.0f} s (raise it or lower --steps)",
                }
            )
            continue
        if name == "ours":
            record = _guarded(
                "ours",
                keys,
                lambda mode=mode, deadline=deadline: _ours(
                    shapes, mode, steps, args.warmup, device, dtype, workdir, deadline
                ),
            )
        else:
            record = _guarded("trl", keys, lambda: _trl(shapes, steps, args.warmup, device, dtype, workdir))
        emit(record)
        _free(device)
    emit({"record": "summary", **common, **summarize(records)})
    from gpu_table import table

    print(f"\n{table(records)}\n\nwrote {out}")
    if args.workdir is None:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _ours(
    shapes: Any, mode: str, steps: int, warmup: int, device: str, dtype: Any, workdir: Path, deadline: float
) -> dict[str, Any]:
    import gpu_ours

    return gpu_ours.run(
        shapes, mode=mode, steps=steps, warmup=warmup, device=device, dtype=dtype, workdir=workdir, deadline=deadline
    )


def _trl(shapes: Any, steps: int, warmup: int, device: str, dtype: Any, workdir: Path) -> dict[str, Any]:
    import gpu_trl

    return gpu_trl.run(shapes, steps=steps, warmup=warmup, device=device, dtype=dtype, workdir=workdir)


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Ratios from the run's records; a missing peer gives None (never a made-up number)."""
    done = [r for r in records if "error" not in r and "skipped" not in r]
    ours = {r["mode"]: r for r in done if r["record"] == "ours"}
    trl = next((r for r in done if r["record"] == "trl"), None)
    limits = next((r for r in done if r["record"] == "limits"), None)
    none = ours.get("none")
    s: dict[str, Any] = {"speedup_vs_trl": None, "async_overhead": None, "sync_overhead": None}
    if none and trl:
        s["speedup_vs_trl"] = trl["step_s"] / none["step_s"]
        s["tokens_per_s_ratio"] = none["completion_tokens_per_s"] / trl["completion_tokens_per_s"]
        s["meets_2x"] = s["speedup_vs_trl"] >= 2.0
    for mode in ("async", "sync"):
        if none and mode in ours:
            s[f"{mode}_overhead"] = ours[mode]["step_s"] / none["step_s"] - 1.0
            s[f"{mode}_block_fraction"] = ours[mode]["checkpoint_block_s"] / ours[mode]["step_s"]
    if s["async_overhead"] is not None:
        s["async_within_2pct"] = s["async_overhead"] <= 0.02
    if limits and "async" in ours:
        s["async_block_vs_bound"] = ours["async"]["checkpoint_block_s"] / limits["bounds"]["async_block_s"]
    return s


def _guarded(name: str, common: dict[str, Any], fn: Any) -> dict[str, Any]:
    t = time.perf_counter()
    try:
        result = fn()
    except Exception as e:  # recorded, not swallowed: the record says what failed and the run goes on
        traceback.print_exc()
        return {"record": name, **common, "error": f"{type(e).__name__}: {e}", "wall_s": time.perf_counter() - t}
    return {"record": name, **common, **result, "wall_s": time.perf_counter() - t}


def _limits(nbytes: int, device: str, workdir: Path) -> dict[str, Any]:
    from gpu_limits import d2h_bandwidth, disk_bandwidth, save_lower_bounds

    d2h = d2h_bandwidth(nbytes, device)
    disk = disk_bandwidth(nbytes, workdir)
    return {"checkpoint_bytes": nbytes, "d2h": d2h, "disk": disk, "bounds": save_lower_bounds(nbytes, d2h, disk)}


def _param_bytes(shapes: Any, dtype: Any) -> int:
    """Bytes of the model's weights in `dtype` (the safetensors payload, headers aside)."""
    import torch

    s = shapes
    attn = s.hidden * s.hidden * 2 + 2 * s.hidden * (s.hidden // s.heads) * s.kv_heads
    layer = attn + 3 * s.hidden * s.intermediate + 2 * s.hidden
    params = s.vocab * s.hidden + s.layers * layer + s.hidden  # tied embeddings: one vocab x hidden matrix
    return params * torch.empty((), dtype=dtype).element_size()


def _env(device: str) -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "host": platform.node(),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # our sampler draws its noise and picks tokens on the CPU: its threads matter
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
    }
    for name in ("transformers", "trl", "datasets", "accelerate", "safetensors"):
        try:
            from importlib.metadata import version

            env[name] = version(name)
        except Exception:  # a missing package is a fact about the machine, recorded as None
            env[name] = None
    if device.startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


def _free(device: str) -> None:
    import gc

    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
