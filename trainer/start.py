"""How a training session starts: the one place that opens a run's log and builds its `run_opened`.

- `fresh`: a new run. Its folder, segment, `run_opened` and `mllog_config` lines are written together.
- `resume`: an existing run continued from a committed checkpoint (trainer/resume.py plans it); a new
  segment whose `run_opened` says what was resumed from.
- `ranks`: a data-parallel rank other than 0 (trainer/parallel/data_parallel.py). It records no run events: rank 0
  opens the run, and the rank learns the folder from it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Literal

from recorder.errors import LogWriteError
from recorder.interrupts import deferred_interrupts
from recorder.provenance import provenance
from recorder.rules import BENCHMARK
from recorder.store.kinds import MllogConfig, RunOpened
from recorder.store.log import LogWriter
from recorder.store.run import RunDir, new_run
from trainer.config import TrainConfig
from trainer.mllog_keys import mllog_config_items
from trainer.parallel.distributed import Ranks

WRITER = "trainer"

StartMode = Literal["fresh", "resume", "ranks"]


def start_mode(*, resuming: bool, ranks: Ranks) -> StartMode:
    """A resumed session, a data-parallel rank that records no run events, or a new run (rank 0 included)."""
    if resuming:
        return "resume"
    return "ranks" if ranks.distributed and not ranks.is_main else "fresh"


def run_opened(cfg: TrainConfig, **resumed: Any) -> RunOpened:
    """A training session's first event: the benchmark, rule and target it trains for, its resolved config
    and provenance. `resumed`: what a resumed session adds (resumed_from, resumed_at_step, ...; resume.py)."""
    return RunOpened(
        benchmark=BENCHMARK,
        ruleset=cfg.ruleset,
        division=cfg.division,
        global_batch_size=cfg.global_batch_size,
        target=cfg.eval.target,
        config=cfg.to_dict(),
        provenance=provenance(),
        **({"resumed_from": None} | resumed),
    )


def open_fresh_run(cfg: TrainConfig, root: Path, run_id: str | None) -> tuple[RunDir, LogWriter]:
    """Create the run (an existing id is refused) and record its config.

    The folder and its first events, or none of them: Ctrl-C here waits until run_opened is recorded, so an
    interrupted run always has the events that say whose it is (and then its train_stop), and a full disk
    that refuses them leaves no folder (recorder.store.run.new_run)."""
    with deferred_interrupts(), new_run(root, run_id) as run_dir:
        log = LogWriter(run_dir, WRITER)
        try:
            log.append(run_opened(cfg))
            for key, value in mllog_config_items(cfg):
                log.append(MllogConfig(), key=key, value=value)
        except Exception:  # a full disk: the folder goes (new_run), and the segment's file with it
            with contextlib.suppress(LogWriteError):
                log.close()
            raise
    return run_dir, log
