"""`recorder replay`, `recorder import`, `recorder score`. Only typer and rich at module level: replay's
modules (and mlperf-logging) are imported inside the commands, so `recorder --help` stays fast."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from recorder.cli.output import console

if TYPE_CHECKING:
    from recorder.events import Event

RulesetOpt = Annotated[str, typer.Option("--ruleset", help="Ruleset whose facts apply (6.1.0).")]
InterpOpt = Annotated[
    str | None,
    typer.Option(
        "--interpretation",
        "-i",
        help="official, earliest-passing, include-final-save, zero-save-cost, inline-eval, checker-order, "
        "ge-threshold, as-recorded. Default: as-recorded for imported logs, official otherwise.",
    ),
]


def _default_interpretation(events: list[Event]) -> str:
    imported = any(e.kind == "mllog_line" for e in events) and not any(e.kind == "weight_update" for e in events)
    return "as-recorded" if imported else "official"


def _minutes(m: float | None) -> str:
    return "-" if m is None else f"{m:.3f}"


def replay(
    run_dir: Annotated[Path, typer.Argument(help="The run directory.")],
    ruleset: RulesetOpt = "6.1.0",
    interpretation: InterpOpt = None,
    compare: Annotated[bool, typer.Option("--compare", help="One table: every interpretation side by side.")] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o", "--output", help="Where to write the mllog (default <run>/derived/result_<interpretation>.txt)."
        ),
    ] = None,
    check: Annotated[bool, typer.Option("--check", help="Run mlperf-logging's compliance and RCP checkers.")] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Derive even from a run that fails `recorder verify` (the output is then marked UNVERIFIED).",
        ),
    ] = False,
) -> None:
    """Derive the run's mllog from its events under an interpretation of the rule (and check it)."""
    from recorder.reader import read_run
    from replay.check import compliance, rcp
    from replay.derive import derive_run
    from replay.interpretations import get_interpretation
    from replay.scores import compute_scores, write_rows
    from replay.trust import UNVERIFIED, clock_steps, mark_rows, require_verified, resumes

    unverified = require_verified(run_dir, force)  # refuses (exit 1) unless --force
    log = read_run(run_dir)
    for problem in unverified:
        console.print(f"[bold red]{UNVERIFIED}:[/] {problem}")
    for torn in log.torn:  # a writer died mid-append: its complete events are replayed, the rest is gone
        console.print(f"[yellow]warning:[/] {torn}")
    for jump in clock_steps(log.events):
        console.print(f"[yellow]warning:[/] {jump}")
    resumed = resumes(log.events)
    for r in resumed:
        console.print(
            f"[yellow]resumed:[/] {r}: its history is kept, but a resumed run is not a valid timed MLPerf run"
        )
    if compare:
        if interpretation or output:
            raise typer.BadParameter("--compare prints every interpretation; drop --interpretation/-o")
        rows = mark_rows(compute_scores(log.run, ruleset), unverified=unverified, resumed=resumed)
        write_rows(log.run, rows)
        _compare_table(rows)
        return
    name = interpretation or _default_interpretation(log.events)
    get_interpretation(name)
    d = derive_run(log.events, ruleset, name)
    marked = f".{UNVERIFIED}" if unverified else ""
    path = output or log.run.derived / f"result_{name}{marked}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(d.text(), encoding="utf-8")
    if unverified and output is not None:  # a chosen -o name gets a sidecar, so the mark sits next to the file
        path.with_name(path.name + f".{UNVERIFIED}").write_text(
            "derived with --force from a run that fails verification:\n" + "\n".join(unverified) + "\n"
        )
    write_rows(log.run, mark_rows(compute_scores(log.run, ruleset), unverified=unverified, resumed=resumed))
    passing = f"passing step {d.passing_step}" if d.passing_step is not None else "no passing step"
    tags = ([f"[bold red]{UNVERIFIED}[/]"] if unverified else []) + (["[yellow]resumed[/]"] if resumed else [])
    console.print(
        f"{' '.join(tags) + ' ' if tags else ''}{name}: {d.status}, {passing}, {_minutes(d.minutes)} "
        f"minutes ({d.why}); {len(d.lines)} lines -> {path}"
    )
    if d.missing_keys:
        console.print(
            f"[yellow]warning:[/] the run recorded no {', '.join(d.missing_keys)} (mllog_config): "
            f"the {ruleset} checker requires them"
        )
    if check:
        checks = [compliance(d.text(), ruleset), rcp([d.text()], ruleset)]
        for c in checks:
            console.print(c.summary())
        if not all(c.ok for c in checks):
            raise typer.Exit(1)


def _compare_table(rows: list[dict[str, Any]]) -> None:
    official = next((r for r in rows if r["interpretation"] == "official"), None)
    base = official["minutes"] if official else None
    table = Table(title=f"{rows[0]['run_id']}: ruleset {rows[0]['ruleset']}")
    for col in ("interpretation", "status", "step", "stop_s", "minutes", "delta", "checker"):
        table.add_column(col, no_wrap=True)
    notes: dict[str, list[str]] = {}
    for r in rows:
        stop = (
            f"{(r['run_stop_ns'] - r['run_start_ns']) / 1e9:.3f}"
            if r["run_stop_ns"] is not None and r["run_start_ns"] is not None
            else "-"
        )
        delta = f"{r['minutes'] - base:+.3f}" if r["minutes"] is not None and base is not None else "-"
        verdict = "PASSED" if r["checker"] and r["checker"].endswith("PASSED") else ("FAILED" if r["checker"] else "-")
        if r.get("verified") is False:
            verdict += " UNVERIFIED"
        if r.get("resumed"):
            verdict += " RESUMED"
        table.add_row(
            r["interpretation"],
            r["status"],
            str(r["passing_step"] if r["passing_step"] is not None else "-"),
            stop,
            _minutes(r["minutes"]),
            delta,
            verdict,
        )
        if r["status"] == "none":
            notes.setdefault(r["why"], []).append(r["interpretation"])
        elif verdict == "FAILED":
            notes.setdefault(_shorten(r["checker"].split("FAILED: ", 1)[-1]), []).append(r["interpretation"])
    console.print(table)
    console.print(
        f"step: passing step; stop_s: run_stop, seconds after run_start; delta: minutes vs official; checker: "
        f"mlperf-logging {rows[0]['mlperf_logging_version']} compliance checker, training {rows[0]['ruleset']}"
    )
    for note, names in notes.items():
        console.print(f"  {', '.join(names)}: {note}")
    if any(r.get("verified") is False for r in rows):
        console.print(
            "[bold red]UNVERIFIED[/]: every row above is derived (--force) from a run that fails "
            "`recorder verify`; no score of it is evidence"
        )
    if any(r.get("resumed") for r in rows):
        console.print(
            "[yellow]RESUMED[/]: the run was resumed from a checkpoint; its history is kept, but it is "
            "not a valid timed MLPerf run"
        )


def _shorten(reasons: str, keep: int = 3) -> str:
    parts = reasons.split("; ")
    return "; ".join(parts[:keep]) + (f"; ... and {len(parts) - keep} more" if len(parts) > keep else "")


def import_(
    mllogs: Annotated[list[Path], typer.Argument(help="mllog files (result_N.txt, *.out, ...).")],
    root: Annotated[Path, typer.Option("--root", help="Where the new runs go.")] = Path("runs"),
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run id (one file only).")] = None,
    ruleset: Annotated[str | None, typer.Option("--ruleset", help="Ruleset to record in run_opened.")] = None,
) -> None:
    """Import mllogs as runs: every ':::MLLOG' line kept verbatim, plus the kinds replay and history read."""
    from recorder.adapters.mllog_import import import_file
    from replay.errors import ImportFileError

    if run_id and len(mllogs) > 1:
        raise ImportFileError(f"--run-id names one run, and {len(mllogs)} files were given: drop --run-id")
    for path in mllogs:
        report = import_file(path, root, run_id, ruleset)
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(report.kinds.items()))
        console.print(f"{path} -> {report.run.path}: {report.lines} mllog lines; {kinds}")
        for line_no, why in report.malformed:
            console.print(f"[yellow]warning:[/] {path}:{line_no}: {why} (kept verbatim as an mllog_line event)")


def score(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories (e.g. the seeds of one submission).")],
    ruleset: RulesetOpt = "6.1.0",
    interpretation: InterpOpt = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Score even runs that fail `recorder verify` (each is then marked UNVERIFIED)."),
    ] = False,
) -> None:
    """Minutes per run and the olympic score of each global-batch-size group, with the checkers' verdicts."""
    from recorder.reader import read_run
    from replay.check import compliance, mlperf_logging_version, rcp
    from replay.derive import derive_run
    from replay.errors import ReplayError
    from replay.olympic import olympic
    from replay.scores import compute_scores, write_rows
    from replay.timeline import build_timeline
    from replay.trust import UNVERIFIED, mark_rows, require_verified, resumes

    groups: dict[int | None, list[dict[str, Any]]] = defaultdict(list)
    checked = [(run_dir, require_verified(run_dir, force)) for run_dir in run_dirs]  # refuse before writing
    for run_dir, unverified in checked:
        log = read_run(run_dir)
        name = interpretation or _default_interpretation(log.events)
        resumed = resumes(log.events)
        write_rows(log.run, mark_rows(compute_scores(log.run, ruleset), unverified=unverified, resumed=resumed))
        tl = build_timeline(log.events)
        marks = ([UNVERIFIED] if unverified else []) + (["RESUMED"] if resumed else [])
        run_label = log.run.run_id + (f" ({', '.join(marks)})" if marks else "")
        entry: dict[str, Any] = {"run": run_label, "interpretation": name, "benchmark": tl.benchmark}
        try:
            d = derive_run(log.events, ruleset, name)
            entry.update(
                minutes=d.minutes if d.status == "success" else None,
                status=d.status,
                text=d.text(),
                check=compliance(d.text(), ruleset),
            )
        except ReplayError as err:
            entry.update(minutes=None, status="none", text=None, check=None, error=str(err))
        groups[tl.global_batch_size].append(entry)
    all_ok = True
    for gbs in sorted(groups, key=lambda g: (g is None, g or 0)):
        entries = groups[gbs]
        table = Table(title=f"GBS {gbs}: {len(entries)} runs, ruleset {ruleset}")
        for col in ("run", "interpretation", "status", "minutes", "compliance checker"):
            table.add_column(col, overflow="fold")
        for e in entries:
            verdict = e["check"].verdict if e["check"] else e.get("error", "")
            table.add_row(e["run"], e["interpretation"], e["status"], _minutes(e["minutes"]), verdict)
            all_ok &= bool(e["check"] and e["check"].ok)
        console.print(table)
        benchmark = next((e["benchmark"] for e in entries if e["benchmark"]), None)
        result = olympic([e["minutes"] for e in entries], benchmark)
        console.print(
            f"olympic score (mlperf-logging {mlperf_logging_version()} result summarizer's "
            f"_compute_olympic_average): {_minutes(result.minutes)} minutes over {result.runs} runs"
            + (f", {result.dropped} not converged" if result.dropped else "")
            + (f" ({result.note})" if result.note else "")
        )
        failing = [e for e in entries if not (e["check"] and e["check"].ok)]
        if failing:
            console.print(
                f"[bold red]{len(failing)} of {len(entries)} runs fail the compliance checker[/], so "
                "mlperf-logging's result summarizer would not score them. Reasons:"
            )
            for reasons in sorted({e["check"].summary() if e["check"] else e.get("error", "") for e in failing}):
                console.print(f"  - {reasons}")
        texts = [e["text"] for e in entries if e["text"]]
        if texts:
            r = rcp(texts, ruleset)
            all_ok &= r.ok
            console.print(r.summary())
    if not all_ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(replay)
    app.command("import")(import_)
    app.command()(score)
