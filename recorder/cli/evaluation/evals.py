"""`recorder evals`: every evaluation of a run, from its events. Imports only typer/rich here; the evaluator's
reading of attempts loads lazily."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recorder.cli.shared.not_comparable import print_not_comparable
from recorder.cli.terminal.json_output import FormatOption, print_document
from recorder.cli.terminal.output import console
from recorder.cli.terminal.tables import Col, print_fitted, set_wide
from recorder.rules import recorded_target

if TYPE_CHECKING:
    from rich.table import Table

    from evaluator.attempts import Attempt
    from recorder.goals import Goal
    from recorder.store.run import RunDir


def _iso(time_ns: int | None) -> str | None:
    """ISO 8601 with the date and the zone, for JSON (the table shows the time of day under a dated title)."""
    if time_ns is None:
        return None
    return dt.datetime.fromtimestamp(time_ns / 1e9, dt.UTC).isoformat(timespec="milliseconds")


def _utc(time_ns: int | None) -> str:
    if time_ns is None:
        return ""
    return dt.datetime.fromtimestamp(time_ns / 1e9, dt.UTC).strftime("%H:%M:%S")


# `recorder evals`' columns; on a narrow terminal those with the highest rank are left out first (tables.py)
EVALS_COLUMNS = (
    Col("step", "right", whole=True),
    Col("segment", drop=4),
    Col("started", drop=3),
    Col("s", "right", drop=2),
    Col("status"),
    Col("accuracy", "right"),
    Col("pass"),
    Col("sha256", drop=5),
    Col("derived/evals/ or reason", drop=1),
)


def evals(
    run_dir: Annotated[Path, typer.Argument(help="The run directory.")],
    wide: Annotated[bool, typer.Option("--wide", help="Every column, however narrow the terminal.")] = False,
    fmt: FormatOption = "table",
) -> None:
    """Every evaluation of a run, from its events: step, outcome, score, timing, checkpoint hash."""
    set_wide(wide)
    from rich import box

    from recorder.store.reader import read_run, recorded_run_id, run_id_from

    log = read_run(run_dir)
    seen = _evaluations(log.events, log.run)
    run_id = run_id_from(log.events) or recorded_run_id(log.run)
    if fmt == "json":
        _evals_json(run_id, seen)
        return
    title = f"{run_id}: {len(seen.rows)} evaluations" + (f", pass means {seen.goal}" if seen.goal is not None else "")
    print_fitted(
        console,
        EVALS_COLUMNS,
        seen.rows,
        title + (f", started {seen.day} UTC" if seen.day else ""),
        box=box.SIMPLE,
        pad_edge=False,
        collapse_padding=True,
    )
    # an import's own target is its benchmark's
    print_not_comparable(seen.why_not, seen.target)
    if seen.not_rechecked:
        console.print(seen.not_rechecked, highlight=False, markup=False, soft_wrap=True)
    zero_shot = _zero_shot_table(log.events)
    if zero_shot is not None:
        console.print(zero_shot)


@dataclass(frozen=True)
class _Evaluations:
    """A run's evaluations as `evals` shows them: one row per attempt (EVALS_COLUMNS), its accuracies whole."""

    rows: list[list[str]]
    accuracies: list[float | None]
    goal: Goal | None
    day: str
    why_not: str | None
    target: float | None
    not_rechecked: str = ""  # a note naming the steps whose checkpoints were not rehashed (past the budget)
    started_ns: list[int | None] = field(default_factory=list)  # each row's start, for JSON


def _evaluations(events: list[Any], run: RunDir) -> _Evaluations:
    from evaluator.attempts import attempts
    from recorder.comparability import config_eval, evaluated_otherwise, scored_with, why_not_comparable
    from recorder.goals import opened_goal
    from recorder.store.kinds import EvalResult, RunOpened

    opened = next((e for e in events if e.kind == "run_opened"), None)
    # the one target eval and replay judge by: the recorded one, else the benchmark's own (recorder.goals)
    run_opened = RunOpened.from_event(opened) if opened else None
    goal = opened_goal(run_opened)
    tried = attempts(events)
    scored = [scored_with(EvalResult.from_event(a.result)) for a in tried if a.result is not None]
    # judged by its own target, a result still passes or fails it; evaluated otherwise, it does neither
    benchmark_evaluation = not evaluated_otherwise(config_eval(run_opened), scored)
    day = next(
        (dt.datetime.fromtimestamp(a.start.time_ns / 1e9, dt.UTC).strftime("%Y-%m-%d") for a in tried if a.start), ""
    )
    from recorder.verify.facts.scored_commits import REHASH_BYTES, recheck

    # a score is its checkpoint's only while the checkpoint holds the committed bytes (recorder verify's rules)
    rechecked = recheck(run, events, {a.step for a in tried if a.result is not None and a.step is not None})
    skipped = ", ".join(map(str, rechecked.not_rechecked))
    return _Evaluations(
        rows=[_evals_row(a, goal, benchmark_evaluation, rechecked.changed.get(a.step or -1)) for a in tried],
        accuracies=[a.accuracy for a in tried],
        started_ns=[a.start.time_ns if a.start else None for a in tried],
        goal=goal,
        day=day,
        why_not=why_not_comparable(run_opened, scored),
        target=recorded_target(run_opened),
        not_rechecked=f"note: the checkpoints of step(s) {skipped} were not rehashed (past "
        f"{REHASH_BYTES // 1024**3} GiB a command): `recorder verify` checks them"
        if skipped
        else "",
    )


def _evals_json(run_id: str, seen: _Evaluations) -> None:
    """`evals --format json`: the document docs/cli.md describes (numbers as numbers, accuracies whole)."""
    names = ["step", "segment", "started", "seconds", "status", "accuracy", "pass", "sha256", "detail"]
    rows = []
    for cells, accuracy, started in zip(seen.rows, seen.accuracies, seen.started_ns, strict=True):
        row: dict[str, Any] = dict(zip(names, cells, strict=True))
        row.update(
            step=int(row["step"]) if row["step"] else None,
            started=_iso(started),
            seconds=float(row["seconds"]) if row["seconds"] else None,
            accuracy=accuracy,
            **{"pass": {"yes": True, "no": False}.get(row["pass"]), "verdict": row["pass"] or None},
        )
        rows.append(row)
    print_document(
        {
            "run_id": run_id,
            "pass_means": None if seen.goal is None else str(seen.goal),
            "not_comparable": seen.why_not,
            "evaluations": rows,
        }
    )


def _zero_shot_table(events: list[Any]) -> Table | None:
    """The harness's task scores (writer "harness"), one row per step, one column per task; None if none."""
    from rich import box

    from evaluator.attempts import HARNESS_WRITER
    from recorder.store.kinds import EvalFailed, EvalResult

    scores: dict[int, dict[str, str]] = {}
    failed: dict[int, str] = {}
    for e in events:
        if e.writer != HARNESS_WRITER or e.step is None:
            continue
        if e.kind == "eval_result" and isinstance(e.value, (int, float)):
            metric = EvalResult.from_event(e).metric or ""
            scores.setdefault(e.step, {})[str(e.key)] = f"{e.value:.4f} {metric}".strip()
        elif e.kind == "eval_failed":
            f = EvalFailed.from_event(e)
            failed[e.step] = f"{f.error}: {f.reason}"
    if not scores and not failed:
        return None
    tasks = list(dict.fromkeys(t for row in scores.values() for t in row))
    from rich.table import Table

    table = Table(
        title="zero-shot tasks (recorder eval --harness lm-eval; latest score per step and task)",
        box=box.SIMPLE,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("step", no_wrap=True)
    for t in tasks:
        table.add_column(t, no_wrap=True)
    table.add_column("failed", overflow="fold")
    for step in sorted(set(scores) | set(failed)):
        row = scores.get(step, {})
        table.add_row(str(step), *[row.get(t, "") for t in tasks], failed.get(step, "") if step not in scores else "")
    return table


def _evals_row(a: Attempt, goal: Goal | None, comparable: bool, changed: str | None = None) -> list[str]:
    """One evaluation; `comparable`: the run was evaluated as the benchmark is (recorder.comparability; else
    its pass column says NOT COMPARABLE rather than yes or no); `changed`: why its checkpoint no longer holds
    the committed bytes (its score is then not shown as that checkpoint's)."""
    from recorder.comparability import NOT_COMPARABLE
    from recorder.store.kinds import EvalFailed, EvalResult, EvalStart

    end = a.stop or a.failed or a.closed_by
    seconds = f"{(end.time_ns - a.start.time_ns) / 1e9:.1f}" if a.start and end else ""
    acc = a.accuracy
    passed = "" if acc is None or goal is None else ("yes" if goal.passes(acc) else "no")
    if a.result is not None:
        result = EvalResult.from_event(a.result)
        if passed and not comparable:
            passed = NOT_COMPARABLE
        detail = (result.results or "").removeprefix("derived/evals/")
        if result.unverified is not None:  # evaluated with --force from a run that fails verify
            detail = f"UNVERIFIED ({result.unverified}) {detail}"
        if changed is not None:  # no verdict on weights that are no longer there
            passed, detail = "", f"CHECKPOINT CHANGED SINCE SCORED ({changed}) {detail}"
    elif a.failed is not None or a.closed_by is not None:
        ev = a.failed or a.closed_by
        assert ev is not None
        f = EvalFailed.from_event(ev)
        detail = f"{f.error}: {f.reason}"
    else:
        detail = "no end recorded (running, or killed)"
    sha = ((EvalStart.from_event(a.start).sha256 if a.start else None) or "")[:8]
    return [
        str(a.step if a.step is not None else ""),
        a.segment.removesuffix(".arrows"),
        _utc(a.start.time_ns if a.start else None),
        seconds,
        a.status,
        "" if acc is None else f"{acc:.4f}",
        passed,
        sha,
        detail,
    ]


def register(app: typer.Typer) -> None:
    app.command()(evals)
