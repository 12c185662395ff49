"""`recorder train --nproc N`: torchrun on this machine, N ranks of the same `recorder train` command.

What torchrun cannot say well is checked first, so that it is one `error:` line with exit 2 rather than a
rank's failure report: the config (every problem at once), the data-parallel limits and a taken run id.
Several machines: run `torchrun --nnodes ... -m recorder.cli train ...` yourself on each.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from recorder.errors import RunExistsError


def launch_data_parallel(
    nproc: int, config: Path | None, sets: list[str] | None, root: Path, run_id: str | None
) -> int:
    """Run `nproc` ranks under `torchrun --standalone` (a free port on this machine); returns its exit status."""
    from trainer.config import load_config
    from trainer.data_parallel import check_data_parallel
    from trainer.distributed import DistributedError, Ranks

    problems = check_data_parallel(load_config(config, sets), Ranks(0, nproc))
    if problems:
        raise DistributedError("; ".join(problems))
    if run_id is not None and (root / run_id).exists():
        raise RunExistsError(f"run {run_id!r} already exists at {root / run_id}: pick another --run-id")
    args = ["--root", str(root)]
    args += [] if config is None else ["--config", str(config)]
    args += [] if run_id is None else ["--run-id", run_id]
    for item in sets or []:
        args += ["--set", item]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    # One intra-op thread per rank unless told otherwise (torchrun would set it too, with a warning).
    env = {"OMP_NUM_THREADS": "1", **os.environ}
    child = subprocess.Popen([*launcher, "-m", "recorder.cli", "train", *args], env=env)
    try:
        return child.wait()
    except KeyboardInterrupt:  # Ctrl-C reached the ranks too: they record their stop; wait for them
        child.wait()
        return 130
