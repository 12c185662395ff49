"""A drop-in for `mlperf_logging.mllog` that records every call as an `mllog_line` event.

Change one import and nothing else:

    from recorder.compat import mllog            # was: from mlperf_logging import mllog
    mllog.config(run="runs/my-run", mirror_file="mlperf.log")
    mllogger = mllog.get_mllogger()
    mllogger.event(key=mllog.constants.GLOBAL_BATCH_SIZE, value=256)

Each call writes exactly the line `mlperf_logging` would write (its own encoder and its own caller lookup,
so `metadata.file`/`lineno` are found the same way, `stack_offset` included) and appends an `mllog_line`
event carrying that line, the time it states, its event type and metadata; `recorder replay
--interpretation as-recorded` gives the lines back. The line still goes to the Python logger (stdout by
default, like mllog) and, with `mirror_file`/`filename`, to the classic text file.

Two deliberate differences from mllog, both about not losing facts silently: a value that cannot be
encoded, or metadata that is not a dict, raises (mllog logs "Failed to encode" / "Metadata is not
dictionary, ignored." and goes on). And the keyword arguments `unique`/`unique_log_rank` of NVIDIA's
mlperf-common wrapper are accepted: with `unique=True` only the process whose rank (`config(rank=...)`,
else the `RANK` environment variable, else 0) equals `unique_log_rank` logs.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlperf_logging.mllog import constants
from mlperf_logging.mllog import mllog as _reference

from recorder.adapters.errors import ConfigConflictError, LogEncodeError, MetadataTypeError, NotConfiguredError
from recorder.store.kinds import MllogLine
from recorder.store.log import LogWriter
from recorder.store.run import RunDir

__all__ = ["MLLogger", "close", "config", "constants", "get_mllogger"]

LOGGER_NAME = "recorder.adapters.mllog"
PREFIX = ":::MLLOG "
RUN_ENV = "RECORDER_RUN"
NS_PER_MS = 1_000_000


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def line_fields(metadata: dict[str, Any]) -> tuple[int | None, int | None]:
    """(step, samples_count) for the event columns: metadata step (or step_num, epoch_num), samples_count."""
    step = next((_int(metadata[k]) for k in ("step", constants.STEP_NUM, constants.EPOCH_NUM) if k in metadata), None)
    return step, _int(metadata.get(constants.SAMPLES_COUNT))


def _default_logger() -> logging.Logger:
    # Same shape as mllog's default (INFO to stdout, not propagated) under our own name, so that using
    # both libraries in one process never doubles a handler.
    logger = logging.getLogger(LOGGER_NAME)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    if not logger.handlers:
        handler = logging.StreamHandler(stream=sys.stdout)
        handler.setLevel(logging.INFO)
        logger.addHandler(handler)
    return logger


def _mllog_call(event_type: str, doc: str) -> Callable[..., None]:
    """One of mllog's three calls (start, end, event) with its signature. It calls `_log_helper` directly, as
    mllog's do, so the stack depth to `get_caller` is mllog's and `stack_offset` means the same thing."""

    def call(
        self: MLLogger,
        key: str,
        value: Any = None,
        metadata: dict[str, Any] | None = None,
        namespace: str | None = None,
        time_ms: int | float | None = None,
        stack_offset: int | None = None,
        clear_line: bool | None = None,
        unique: bool = False,
        unique_log_rank: int = 0,
    ) -> None:
        self._log_helper(
            event_type, key, value, metadata, namespace, time_ms, stack_offset, clear_line, unique, unique_log_rank
        )

    call.__doc__ = doc
    return call


class MLLogger:
    """`mlperf_logging.mllog.MLLogger` with the same methods and defaults, recording into a run."""

    def __init__(
        self,
        logger: logging.Logger | None = None,
        default_namespace: str = constants.DEFAULT_NAMESPACE,
        default_stack_offset: int = 1,
        default_clear_line: bool = False,
        root_dir: str | None = None,
        *,
        run: RunDir | Path | str | None = None,
        writer: str = "mllog",
        clock: Callable[[], int] = time.time_ns,
        rank: int | None = None,
    ) -> None:
        if logger is not None and not isinstance(logger, logging.Logger):
            raise ValueError("logger must be a `logging.Logger` instance.")
        self.logger = logger if logger is not None else _default_logger()
        self.default_namespace = default_namespace
        self.default_stack_offset = default_stack_offset
        self.default_clear_line = default_clear_line
        self.root_dir = root_dir
        self.run = None if run is None else (run if isinstance(run, RunDir) else RunDir.open(run))
        self.writer = writer
        self.clock = clock
        self.rank = rank
        self.mirror_file: str | None = None
        self._log: LogWriter | None = None
        self._lines = 0
        self._lock = threading.RLock()

    # The three calls of mllog, with its signature (see _mllog_call).
    start = _mllog_call(constants.INTERVAL_START, "Start a time interval (an `INTERVAL_START` line).")
    end = _mllog_call(
        constants.INTERVAL_END,
        "End a time interval (an `INTERVAL_END` line); `time_ms` overrides the clock (e.g. a backdated run_stop).",
    )
    event = _mllog_call(constants.POINT_IN_TIME, "A point-in-time event (a `POINT_IN_TIME` line).")

    def _log_helper(
        self,
        event_type: str,
        key: str,
        value: Any,
        metadata: dict[str, Any] | None,
        namespace: str | None,
        time_ms: int | float | None,
        stack_offset: int | None,
        clear_line: bool | None,
        unique: bool,
        unique_log_rank: int,
    ) -> None:
        if unique and self._rank() != unique_log_rank:
            return
        stack_offset = self.default_stack_offset if stack_offset is None else stack_offset
        caller = _reference.get_caller(2 + stack_offset, root_dir=self.root_dir)
        if metadata and not isinstance(metadata, dict):
            raise MetadataTypeError(f"mllog {key!r}: metadata must be a dict, got {type(metadata).__name__}")
        log_metadata = {**caller, **(metadata or {})}
        with self._lock:
            if time_ms is None:
                time_ms = self.clock() // NS_PER_MS
            line = self._encode(namespace, time_ms, event_type, key, value, log_metadata)
            self._record(line, time_ms)
            clear = self.default_clear_line if clear_line is None else clear_line
            self.logger.log(logging.INFO, "\n" + line if clear else line)

    def _encode(
        self,
        namespace: str | None,
        time_ms: int | float,
        event_type: str,
        key: str,
        value: Any,
        metadata: dict[str, Any],
    ) -> str:
        ns = self.default_namespace if namespace is None else namespace
        try:
            # mllog's own encoder: the same key order, separators, float spelling and numpy handling.
            return str(_reference._encode_log(ns, time_ms, event_type, key, value, metadata))
        except (TypeError, ValueError) as e:
            raise LogEncodeError(
                f"mllog {key!r}: value or metadata is not JSON-encodable ({e}); pass plain "
                "numbers, strings, lists and dicts"
            ) from e

    def _record(self, line: str, time_ms: int | float) -> None:
        # Parse the line back rather than storing the arguments: what is recorded is what the line says.
        parsed = json.loads(line[len(PREFIX) :])
        metadata = parsed["metadata"]
        step, samples = line_fields(metadata)
        self._lines += 1
        recorded = MllogLine(
            line=line,
            file=self.mirror_file,
            line_no=self._lines,
            time_ms=time_ms,
            event_type=parsed["event_type"],
            metadata=metadata,
            error=None,
        )
        self._writer().append(
            recorded,
            step=step,
            samples_count=samples,
            key=parsed["key"],
            value=parsed["value"],
            time_ns=round(time_ms * NS_PER_MS),
        )

    def _writer(self) -> LogWriter:
        if self._log is None:
            if self.run is None:
                env = os.environ.get(RUN_ENV)
                if not env:
                    raise NotConfiguredError(
                        "recorder.adapters.mllog does not know where to record: call "
                        "mllog.config(run=RUN_DIR) or mllog.config(root=DIR), or set RECORDER_RUN=RUN_DIR"
                    )
                self.run = RunDir.open(env)
            self._log = LogWriter(self.run, self.writer if self._rank() == 0 else f"{self.writer}-rank{self._rank()}")
        return self._log

    def _rank(self) -> int:
        if self.rank is not None:
            return self.rank
        return int(os.environ.get("RANK", "0") or 0)

    def close(self) -> None:
        """Close the run's segment (writes `segment_closed`). Called at exit; safe to call twice."""
        with self._lock:
            if self._log is not None:
                self._log.close()
                self._log = None


_lock = threading.RLock()
mllogger = MLLogger()
atexit.register(mllogger.close)


def get_mllogger() -> MLLogger:
    """The shared logger, as `mlperf_logging.mllog.get_mllogger()`."""
    return mllogger


def config(**kwargs: Any) -> None:
    """Configure the shared logger: mllog's options plus where to record.

    mllog's: logger, filename (adds a file handler), default_namespace, default_stack_offset,
    default_clear_line, root_dir. Ours: run (an existing run directory) or root (+ run_id: create a new
    run), mirror_file (the classic text log, same as filename), writer (segment name, default 'mllog'),
    rank, clock (a `time.time_ns`-like callable, for tests). Unknown keywords raise TypeError.
    """
    with _lock:
        _configure_run(kwargs)
        logger = kwargs.pop("logger", None)
        if logger is not None:
            if not isinstance(logger, logging.Logger):
                raise ValueError("'logger' must be an instance of 'logging.Logger'.")
            mllogger.logger = logger
        for name in ("filename", "mirror_file"):
            path = kwargs.pop(name, None)
            if path is not None:
                handler = logging.FileHandler(str(path))
                handler.setLevel(logging.INFO)
                mllogger.logger.addHandler(handler)
                mllogger.mirror_file = str(path)
        for name, kind in (
            ("default_namespace", str),
            ("default_stack_offset", int),
            ("default_clear_line", bool),
            ("root_dir", str),
            ("writer", str),
            ("rank", int),
        ):
            if name in kwargs:
                value = kwargs.pop(name)
                if not isinstance(value, kind):
                    raise ValueError(f"'{name}' must be a {kind.__name__}.")
                setattr(mllogger, name, value)
        if "clock" in kwargs:
            mllogger.clock = kwargs.pop("clock")
        if kwargs:
            raise TypeError(f"mllog.config: unknown options {sorted(kwargs)}")


def _configure_run(kwargs: dict[str, Any]) -> None:
    run, root, run_id = kwargs.pop("run", None), kwargs.pop("root", None), kwargs.pop("run_id", None)
    if run is None and root is None:
        return
    if run is not None and root is not None:
        raise ConfigConflictError("mllog.config: give run= (an existing run) or root= (a new run), not both")
    mllogger.close()  # a new run gets a new segment; the old one is closed properly
    mllogger.run = RunDir.create(root, run_id) if run is None else RunDir.open(run)
    mllogger._lines = 0


def close() -> None:
    """Close the shared logger's segment now (otherwise done at exit)."""
    mllogger.close()
