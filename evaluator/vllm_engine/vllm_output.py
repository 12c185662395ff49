"""vLLM's own output kept off the user's terminal, in a log file of the run (`<run>/derived/evals/vllm.log`).

vLLM speaks on its own: its loggers write WARNING lines to stdout (at every engine start, the traceback of
its chat-template warm-up, which cannot run with `skip_tokenizer_init`), and the processes it spawns (the
engine core, its workers) print, warn and log from C++ on the standard streams they inherit. Two things
send all of it to the log, appended session after session:
- its loggers, in this process and in every process it starts, are configured from a logging config file
  (VLLM_LOGGING_CONFIG_PATH, read by each process when it imports vllm) whose one handler is the log file;
- while vllm is imported and while its engine starts (when it spawns its processes, which keep the
  streams they were given), this process's stdout and stderr file descriptors point at the log.
What the evaluation decides still reaches the user: a checkpoint vLLM cannot serve, or an engine that fails,
is an eval_failed whose reason the command prints, naming the log; its one `error:` line follows.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from recorder.store.run import RunDir, derived_dir

LOG_NAME = "vllm.log"
LOGGING_CONFIG_NAME = "vllm-logging.json"  # beside the log: read by every vLLM process as it starts
SAID_CHARS = 300  # of an error vLLM raised, what the user's one line shows; the whole of it is in the log


def vllm_log(run: RunDir) -> Path:
    """Where a session's vLLM output goes: beside the run's evaluation results."""
    return derived_dir(run, "evals") / LOG_NAME


def logging_config(log: Path) -> dict[str, object]:
    """A logging.config.dictConfig that sends every record of vLLM's loggers to `log`, appended, in vLLM's
    own line format; nothing propagates to the root logger (which may write to the terminal)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "vllm": {
                "()": "vllm.logging_utils.NewLineFormatter",
                "datefmt": "%m-%d %H:%M:%S",
                "format": "(%(vllm_process_name)s pid=%(process)d) %(levelname)s %(asctime)s "
                "[%(fileinfo)s:%(lineno)d] %(message)s",
            }
        },
        "handlers": {
            "vllm": {"class": "logging.FileHandler", "filename": str(log.absolute()), "mode": "a", "formatter": "vllm"}
        },
        "loggers": {"vllm": {"handlers": ["vllm"], "level": "INFO", "propagate": False}},
    }


def route_logging(log: Path) -> None:
    """vLLM's loggers, here and in the processes it starts, configured to write to `log` (before vllm is
    imported), through a logging config file beside it (LOGGING_CONFIG_NAME, written again each session)."""
    config = log.with_name(LOGGING_CONFIG_NAME)
    config.write_text(json.dumps(logging_config(log), indent=1) + "\n")
    os.environ["VLLM_CONFIGURE_LOGGING"] = "1"
    os.environ["VLLM_LOGGING_CONFIG_PATH"] = str(config)


@contextmanager
def streams_into(log: Path | None) -> Iterator[None]:
    """Inside: this process's stdout and stderr file descriptors write to `log` (appended), so that what
    vLLM prints, and every process it starts meanwhile, writes there; restored on the way out, an error
    included. `log` None: nothing changes."""
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def said_into(log: Path, error: BaseException) -> str:
    """What `error` (vLLM's) says, on one line of at most SAID_CHARS, naming `log`, where its whole text and
    traceback are appended (vLLM's messages run to many lines: a pydantic error lists every model it has)."""
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"recorder: vLLM raised {type(error).__name__}:\n")
        traceback.print_exception(error, file=f)
    text = " ".join(str(error).split())
    short = text if len(text) <= SAID_CHARS else text[: SAID_CHARS - 4] + " ..."
    return f"{type(error).__name__}: {short} (its whole text and vLLM's own output: {log})"
