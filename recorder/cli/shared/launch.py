"""`recorder train --nproc N`: torchrun on this machine, N ranks of the same `recorder train` command.

What torchrun cannot say well is checked first, so that it is one `error:` line with exit 2 rather than a
rank's failure report: the config (every problem at once), the data-parallel limits and a taken run id.
Several machines: run `torchrun --nnodes ... -m recorder.cli train ...` yourself on each.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recorder.errors import RunExistsError
from recorder.interrupts import deferred_interrupts


def launch_data_parallel(
    nproc: int, config: Path | None, sets: list[str] | None, root: Path, run_id: str | None
) -> int:
    """Run `nproc` ranks under `torchrun --standalone` (a free port on this machine); returns its exit status."""
    from trainer.config import load_config
    from trainer.parallel.data_parallel import check_data_parallel
    from trainer.parallel.distributed import DistributedError, Ranks

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
    launcher = [sys.executable, "-m", "trainer.parallel.torchrun", "--standalone", f"--nproc-per-node={nproc}"]
    # One intra-op thread per rank unless told otherwise (torchrun would set it too, with a warning).
    env = {"OMP_NUM_THREADS": "1", **os.environ}
    # torchrun starts with Ctrl-C ignored: an interpreter interrupted while it imports its site packages
    # prints a fatal-error traceback. trainer.parallel.torchrun takes Ctrl-C again as its first act and says so by
    # creating the file ARMED names; a Ctrl-C that came before is passed on to it then.
    with tempfile.TemporaryDirectory(prefix="recorder-launch-") as scratch:
        armed = Path(scratch) / "armed"
        child: subprocess.Popen[bytes] | None = None
        try:
            with deferred_interrupts():  # a Ctrl-C while it starts is handled below, with the child known
                child = subprocess.Popen(
                    [*launcher, "-m", "recorder.cli", "train", *args],
                    env={**env, ARMED: str(armed)},
                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
                )
            return child.wait()
        except KeyboardInterrupt:  # Ctrl-C reached the ranks too: they record their stop; wait for them
            if child is None:
                raise
            _pass_on_interrupt(child, armed)
            child.wait()
            return 130


ARMED = "RECORDER_TORCHRUN_ARMED"


def _pass_on_interrupt(child: subprocess.Popen[bytes], armed: Path) -> None:
    """A Ctrl-C torchrun ignored (it came while torchrun was still starting) is sent to it once it listens."""
    if armed.exists():
        return  # it listened: the terminal's Ctrl-C reached it
    while child.poll() is None and not armed.exists():
        time.sleep(0.05)
    if child.poll() is None:
        child.send_signal(signal.SIGINT)
