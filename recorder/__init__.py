"""recorder: an event-sourced run recorder with replayable MLPerf scoring.

The core (this package) knows events, segments, runs and history. It never imports torch or `replay`.
Before anything else it makes the project's own packages win over a user's files of the same names
(recorder.own_packages).
"""

from recorder.own_packages import install as _install_own_packages

_install_own_packages()

# after the finder: these import `schemas`
from recorder.events import Event  # noqa: E402
from recorder.log import LogWriter  # noqa: E402
from recorder.reader import RunLog, TornTail, read_run  # noqa: E402
from recorder.run import RunDir  # noqa: E402

__all__ = ["Event", "LogWriter", "RunDir", "RunLog", "TornTail", "read_run"]
__version__ = "0.1.0"
