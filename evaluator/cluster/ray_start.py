"""Starting Ray for the commands that spread checkpoints over actors (`eval --workers N`, `zero-shot`).

A start that fails is one RayStartError naming the cause and the ways out (`--workers 1`, `--ray-address`),
never Ray's traceback. A local start-up that timed out (the raylet did not register in time, as happens under
load) is tried once more, after what the first try left is shut down; a start that cannot work (an address
nothing answers at) is not. A local start whose paths cannot work (one with a space, a temp dir that cannot be
made) is refused before Ray is started at all: Ray would only time out on it, a minute or more later."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from evaluator.errors import RayStartError

LOCAL = "local"  # Ray's address for a new local cluster
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
    check_local_start(address)
    for attempt in (1, 2):
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
            return True
        except Exception as e:  # Ray raises a bare Exception, OSError, ConnectionError, ...
            ray.shutdown()  # what the failed start left running
            if not (TIMED_OUT in str(e) and attempt == 1):
                raise RayStartError(_why(_cause(e), address)) from None
    raise AssertionError("unreachable")  # pragma: no cover


def check_local_start(address: str | None) -> None:
    """RayStartError when `address` asks for a new local cluster (None or "local") and its paths alone show it
    cannot start; commands call it before any loading, so the refusal comes in a second."""
    if address in (None, LOCAL) and (cause := _local_start_cannot_work()) is not None:
        raise RayStartError(_why(cause, None))


def _why(cause: str, address: str | None) -> str:
    where = f"join the cluster at {address}" if address is not None else "start a local cluster"
    return f"Ray could not {where}: {cause}: {WAYS_OUT}"


def _cause(e: Exception) -> str:
    if isinstance(e, OSError) and e.filename is not None:
        return f"{e.filename}: {e.strerror} (Ray's temp dir: set RAY_TMPDIR to a directory it can use)"
    if TIMED_OUT in str(e):
        return "its node did not come up in time, twice (a loaded machine)"
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _local_start_cannot_work() -> str | None:
    """Why a local cluster cannot start here, found from its paths alone; None when nothing says so."""
    spaced = _spaced_paths()
    if spaced:
        return f"a path Ray's processes run from has a space ({', '.join(spaced)})"
    unusable = _unusable_temp_dir()
    return None if unusable is None else _cause(unusable)


def _ray_temp() -> Path:
    return Path(os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()) / "ray"


def _unusable_temp_dir() -> OSError | None:
    """Why Ray cannot make its temp dir, as the OSError its start would raise (naming the first folder it
    could not make under the last one that exists); None when it can. Nothing is created."""
    path = _ray_temp()
    made = path  # the first folder Ray's `mkdir -p` would have to make, or the temp dir itself
    while not os.path.lexists(made.parent) and made.parent != made:
        made = made.parent
    if os.path.lexists(made):
        return None if made.is_dir() else NotADirectoryError(20, "Not a directory", str(made))
    if not made.parent.is_dir():
        return NotADirectoryError(20, "Not a directory", str(made))
    if not os.access(made.parent, os.W_OK | os.X_OK):
        return PermissionError(13, "Permission denied", str(made))
    return None


def _spaced_paths() -> list[str]:
    """The paths a local cluster's processes start from that hold a space: Ray splits its processes' command
    lines there, so the node never comes up (it times out instead of saying so)."""
    found = {"Python": sys.executable, "temp dir": str(_ray_temp())}
    return [f"{name} at {path!r}" for name, path in found.items() if " " in path]
