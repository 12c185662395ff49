"""torchrun as `recorder train --nproc N` starts it, ending quietly on Ctrl-C.

Ctrl-C reaches torchrun and the ranks together (one process group). The ranks record where they stopped and
rank 0 says it; torchrun stops its workers, logs each signal and worker at WARNING ("Received 2 death
signal, shutting down workers", "Sending process ... closing signal SIGINT"), then raises SignalException,
which Python would print as a 40-line traceback after the tool's own line. Here its agent logs errors only
(unless the user set LOGLEVEL, as torchrun reads it) and Ctrl-C is exit 130 and nothing more.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path


def _quiet_agent() -> None:
    if "LOGLEVEL" in os.environ:
        return
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("torch.distributed"):
            logging.getLogger(name).setLevel(logging.ERROR)


def _run() -> int:
    """torchrun's exit status; 130 for Ctrl-C, also while torch itself is still loading."""
    try:
        from torch.distributed.elastic.multiprocessing.api import SignalException
        from torch.distributed.run import main
    except KeyboardInterrupt:  # no rank was started: nobody else will say it
        print("train: interrupted while starting; nothing was recorded", file=sys.stderr)
        return 130
    _quiet_agent()
    try:
        main()
    except (SignalException, KeyboardInterrupt):
        return 130
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the launcher started it ignored (see there)
    if armed := os.environ.pop("RECORDER_TORCHRUN_ARMED", None):  # not passed on to the ranks
        Path(armed).touch()
    sys.exit(_run())
