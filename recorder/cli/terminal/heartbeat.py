"""A line every few seconds while a command works silently (torch imports, the warm-up), so a user knows it
is alive before its first progress line."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

INTERVAL_S = 10.0


class Heartbeat:
    """Prints `train: STATUS (N s)` every INTERVAL_S until `stop()` (the first step) or the block ends; the
    status is `still starting` until the caller says what it is doing (`status`, e.g. the warm-up's batch)."""

    def __init__(self, console: Console, interval_s: float = INTERVAL_S) -> None:
        self.console, self.interval_s = console, interval_s
        self.status = "still starting"
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="recorder-heartbeat", daemon=True)

    def _beat(self) -> None:
        start = time.monotonic()
        while not self._stopped.wait(self.interval_s):
            self.console.print(f"train: {self.status} ({time.monotonic() - start:.0f} s)")

    def stop(self) -> None:
        self._stopped.set()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
