"""The physical limits a checkpoint save cannot beat, measured in the same run as the steps.

- device -> host copy bandwidth into pinned memory (what an asynchronous save must do before the loop may go
  on: the only part that has to block);
- disk write bandwidth with fsync for a checkpoint-sized file (what a synchronous save also waits for).
Lower bounds on the time a save blocks the loop: async >= bytes / d2h; sync >= bytes / d2h + bytes / disk.
On a CPU-only machine "d2h" is a host-to-host copy (pinned is then false).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def d2h_bandwidth(nbytes: int, device: str, repeats: int = 5) -> dict[str, Any]:
    """Best-of-`repeats` GB/s of one `nbytes` copy from `device` into (pinned, if a GPU) host memory."""
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device=device).fill_(7)
    pinned = device.startswith("cuda")
    dst = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    best = float("inf")
    for _ in range(repeats):
        if pinned:
            torch.cuda.synchronize()
        t = time.perf_counter()
        dst.copy_(src, non_blocking=pinned)
        if pinned:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    assert int(dst[-1]) == 7  # the copy really landed
    return {"bytes": nbytes, "seconds": best, "gb_per_s": nbytes / best / 1e9, "pinned": pinned}


def disk_bandwidth(nbytes: int, directory: Path, repeats: int = 2) -> dict[str, Any]:
    """Best-of-`repeats` GB/s writing `nbytes` to a new file in `directory`, fsync included."""
    directory.mkdir(parents=True, exist_ok=True)
    data = os.urandom(min(nbytes, 64 << 20))
    best = float("inf")
    for i in range(repeats):
        path = directory / f"disk-probe-{i}.bin"
        t = time.perf_counter()
        with open(path, "wb") as f:
            left = nbytes
            while left > 0:
                left -= f.write(data[: min(left, len(data))])
            f.flush()
            os.fsync(f.fileno())
        best = min(best, time.perf_counter() - t)
        path.unlink()
    return {
        "bytes": nbytes,
        "seconds": best,
        "gb_per_s": nbytes / best / 1e9,
        "path": str(directory),
        "fs": filesystem_type(directory),
    }


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem holding `path` (tmpfs would make 'disk' bandwidth a memory copy)."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return None
    target = str(path.resolve())
    best = max(
        (m for m in mounts if target == m[0] or target.startswith(m[0].rstrip("/") + "/")),
        key=lambda m: len(m[0]),
        default=None,
    )
    return None if best is None else best[1]


def save_lower_bounds(nbytes: int, d2h: dict[str, Any], disk: dict[str, Any]) -> dict[str, float]:
    """Seconds a save must block the loop at best: async (copy to host only) and sync (copy + durable write)."""
    copy_s = nbytes / (d2h["gb_per_s"] * 1e9)
    return {"async_block_s": copy_s, "sync_block_s": copy_s + nbytes / (disk["gb_per_s"] * 1e9)}
