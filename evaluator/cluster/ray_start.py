"""Starting Ray for the commands that spread checkpoints over actors (`eval --workers N`, `zero-shot`).

A start that fails is one RayStartError naming the cause and the ways out (`--workers 1`, `--ray-address`),
never Ray's traceback. A local start-up that timed out (the raylet did not register in time, as happens under
load) is tried once more, after what the first try left is shut down; a start that cannot work (a path with
a space, a temp dir Ray cannot use, an address nothing answers at) is not."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from evaluator.errors import RayStartError

TIMED_OUT = "timed out during startup"  # Ray's words when the node it started did not come up in time
WAYS_OUT = (
    "run with --workers 1 (one checkpoint after another in this process), "
    "or join a running cluster with --ray-address ADDRESS"
)


def start_ray(address: str | None) -> bool:
    """Ray initialized in this process (joining `address` when given); True when this call started it (the
    caller shuts it down), False when it was already running. RayStartError when it cannot start."""
    import ray

    if ray.is_initialized():
        return False
    spaced = _spaced_paths() if address is None else []
    for attempt in (1, 2):
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
            return True
        except Exception as e:  # Ray raises a bare Exception, OSError, ConnectionError, ...
            ray.shutdown()  # what the failed start left running
            retry = TIMED_OUT in str(e) and not spaced and attempt == 1
            if not retry:
                raise RayStartError(_why(e, address, spaced)) from None
    raise AssertionError("unreachable")  # pragma: no cover


def _why(e: Exception, address: str | None, spaced: list[str]) -> str:
    where = f"join the cluster at {address}" if address is not None else "start a local cluster"
    if spaced:
        cause = f"a path Ray's processes run from has a space ({', '.join(spaced)})"
    elif isinstance(e, OSError) and e.filename is not None:
        cause = f"{e.filename}: {e.strerror} (Ray's temp dir: set RAY_TMPDIR to a directory it can use)"
    elif TIMED_OUT in str(e):
        cause = "its node did not come up in time, twice (a loaded machine)"
    else:
        cause = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return f"Ray could not {where}: {cause}: {WAYS_OUT}"


def _spaced_paths() -> list[str]:
    """The paths a local cluster's processes start from that hold a space: Ray splits its processes' command
    lines there, so the node never comes up (it times out instead of saying so)."""
    temp = os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()
    found = {"Python": sys.executable, "temp dir": str(Path(temp) / "ray")}
    return [f"{name} at {path!r}" for name, path in found.items() if " " in path]
