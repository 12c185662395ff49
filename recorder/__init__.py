"""recorder: an event-sourced run recorder with replayable MLPerf scoring.

The core (this package) knows events, segments, runs and history. It never imports torch or `replay`.
Before anything else it makes the project's own packages win over a user's files of the same names
(recorder.own_packages).
"""

from recorder.interrupts import guard_startup

guard_startup()  # first: Ctrl-C while the command imports numpy and pyarrow is one line, not a traceback

from recorder.own_packages import install as _install_own_packages  # noqa: E402

_install_own_packages()

# The public API, loaded when first used (PEP 562): they bring pyarrow and numpy, which `recorder --help` and
# most commands' start need not wait for. They import `schemas`, so only after the finder above.
_EXPORTS = {
    "Event": "recorder.store.events",
    "LogWriter": "recorder.store.log",
    "RunLog": "recorder.store.reader",
    "TornTail": "recorder.store.reader",
    "read_run": "recorder.store.reader",
    "RunDir": "recorder.store.run",
}
__all__ = ["Event", "LogWriter", "RunDir", "RunLog", "TornTail", "read_run"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'recorder' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
