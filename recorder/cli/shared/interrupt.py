"""Ctrl-C in any command: one line saying what was kept and how to go on, exit 130, never a traceback.

Each command stops where Python raises KeyboardInterrupt; what it wrote before that is whole, because every
derived file is renamed into place complete (`recorder.store.run.write_derived`), every event is one append, and
a run's first events are written without interruption (`recorder.interrupts`). So what is kept depends
only on the command, and is said here once for each.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from recorder.errors import RecorderError
from recorder.interrupts import end_startup

# What each command has kept when Ctrl-C stops it, and how to go on: one line for every command
# (tests/layout/test_kept_lines.py), since only the command knows what it writes.
KEPT = {
    # train and zero-shot say more where they know (the step, the run): these lines are where they do not
    "train": "every event and checkpoint recorded before it is kept (each is one append or one rename); "
    "`recorder verify RUN` shows what the run holds, `recorder train --resume RUN` goes on from its last checkpoint",
    "keygen": "a key file is written whole or not at all, never over an existing one; delete any KEY or KEY.pub "
    "it left and run it again",
    "export-hf": "the -o directory may hold part of the export: delete it and run it again",
    "plot": "nothing was changed (the figure is written whole or not at all); run it again",
    "events": "nothing was changed; run it again",
    "import": "every file imported before it is kept, each a complete run, and the one being read left no run; "
    "run the same command again (a file already imported is refused by its run id: give the rest)",
    "import-checkpoints": "the checkpoints recorded before it are kept; run the same command again",
    # true wherever it lands; eval itself says more where it knows (eval_interrupted)
    "eval": "every evaluation that finished is kept, and one that was running is recorded as interrupted "
    "(`recorder evals` shows it so); run it again: it evaluates the rest",
    "audit": "nothing was written (the audit writes derived/audit.json at its end); run it again",
    "replay": "nothing was changed (derived files are replaced whole or not at all); run it again",
    "score": "nothing was changed (derived files are replaced whole or not at all); run it again",
    "report": "no report was written (it is written whole at the end); run it again",
    "verify": "nothing was judged and nothing changed; run it again",
    "check-submission": "the submission was not changed (it is checked on a copy); run it again",
    "zero-shot": "no result was written (each checkpoint's is written when the command ends); run it again",
    "collect": "nothing was changed; run it again",
    "rm": "each run is removed whole or kept: the runs named before it are gone, the one being deleted may be "
    "left as a `.removing-*` folder beside it that no command reads (delete it by hand), the rest are kept",
    "compact": "runs compacted before it are kept; the rest read from their segments: run it again",
    "query": "nothing was changed (the history is read-only; an -o file is written whole or not at all); run it again",
    "runs": "nothing was changed (the history is read-only); run it again",
    "evals": "nothing was changed (the history is read-only); run it again",
}

F = TypeVar("F", bound=Callable[..., Any])


def eval_interrupted(closed: list[int], evaluated: int) -> str:
    """What `recorder eval` kept when Ctrl-C stopped it, from what the session did: the steps whose evaluation
    it recorded as interrupted on its way out, and how many evaluations it ended before that."""
    if closed:
        running = (
            f"the one running (step {closed[0]}) is"
            if len(closed) == 1
            else (f"the ones running (steps {', '.join(map(str, closed))}) are")
        )
        return (
            f"eval: interrupted; every evaluation that finished is kept, and {running} recorded as interrupted "
            "(`recorder evals` shows it so); run it again: it evaluates the rest"
        )
    if evaluated:
        return (
            "eval: interrupted between evaluations; every one that finished is kept and none was left running; "
            "run it again: it evaluates the rest"
        )
    return "eval: interrupted before any evaluation started; no evaluation was recorded; run it again"


def eval_session_interrupted(e: KeyboardInterrupt, evaluated: int) -> CommandInterrupted:
    """Ctrl-C in an eval session (`eval`, `eval --harness`), said from what it did: the steps it recorded as
    interrupted on its way out (evaluator.errors.EvaluationsInterrupted), else whether it had evaluated any."""
    from evaluator.errors import EvaluationsInterrupted

    closed = e.steps if isinstance(e, EvaluationsInterrupted) else []
    return CommandInterrupted(eval_interrupted(closed, evaluated))


class CommandInterrupted(RecorderError):
    """Ctrl-C stopped a command: what it kept is in the message; exit 130."""

    exit_code = 130
    abandons_process = False


def interruptible(name: str, command: F) -> F:
    """`command`, with Ctrl-C said in one line (CommandInterrupted) instead of click's bare "Aborted!"."""
    kept = KEPT[name]  # a command without its line fails here, when the command line is built

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        end_startup()  # from here on the command itself stops at its next safe point
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt:
            raise CommandInterrupted(f"{name}: interrupted; {kept}") from None
        except Exception as e:
            if not (_in_a_history_query(e) or interrupted_in_duckdb(e)):
                raise
            stopped = CommandInterrupted(f"{name}: interrupted; {kept}")
            stopped.abandons_process = True  # as recorder.history.limits.QueryInterrupted says why
            raise stopped from None

    return run  # type: ignore[return-value]


def _in_a_history_query(e: BaseException) -> bool:
    """Whether `e` is Ctrl-C in a query the history ran for the command (runs, evals, report as well as query):
    said as that command's interruption, never under the query's name. A command's own interruption (train's,
    zero-shot's, eval's) keeps its message."""
    if not isinstance(e, RecorderError) or e.exit_code != 130:
        return False
    from recorder.history.limits import QueryInterrupted  # only once a command has stopped: not at start-up

    return isinstance(e, QueryInterrupted)


def interrupted_in_duckdb(e: BaseException) -> bool:
    """Whether `e` is Ctrl-C as DuckDB's Python client reports it: a SIGINT that lands while a statement runs
    in the main thread (opening the history's views, a command's own query) interrupts the statement and
    comes out as RuntimeError('Query interrupted'), the KeyboardInterrupt consumed (duckdb 2.0); one that lands
    while DuckDB counts a registered Arrow object's rows, as an InvalidInputException naming it. Queries run
    in a worker thread under a time limit are told apart by `recorder.history.limits`."""
    if type(e) is RuntimeError and str(e) == "Query interrupted":
        return True
    # a SIGINT while DuckDB scans a registered Arrow object (the history's live events) surfaces as the scan's
    # failure, naming the KeyboardInterrupt it caught
    return type(e).__module__.endswith("duckdb") and "KeyboardInterrupt" in str(e)
