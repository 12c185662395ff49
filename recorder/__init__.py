"""recorder: an event-sourced run recorder with replayable MLPerf scoring.

The core (this package) knows events, segments, runs and history. It never imports torch or `replay`.
"""

from recorder.events import Event
from recorder.log import LogWriter
from recorder.reader import RunLog, TornTail, read_run
from recorder.run import RunDir

__all__ = ["Event", "LogWriter", "RunDir", "RunLog", "TornTail", "read_run"]
__version__ = "0.1.0"
