"""`recorder audit`: re-evaluate the deciding checkpoints and say, per step, whether the record is reproduced.

Imports only typer/rich here; the evaluator loads lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from recorder.cli.terminal.output import console, label, line, warning
from recorder.cli.terminal.progress import UntilFirst

if TYPE_CHECKING:
    from evaluator.auditing.audit import AuditReport, StepAudit


def audit_command(
    run_dir: Annotated[Path, typer.Argument(help="The run directory (evaluated by `recorder eval`).")],
    steps: Annotated[
        str | None,
        typer.Option(help="Audit these steps, S1,S2,... (default: the passing one and those evaluated before it)."),
    ] = None,
    workers: Annotated[int, typer.Option(help="Evaluation workers; more than 1 runs Ray actors.")] = 1,
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="Use the running Ray cluster at this address.")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Samples generated per batch (no completion depends on it).")] = 64,
    task: Annotated[
        Path | None,
        typer.Option(help="The task spec the evaluation used, as `recorder eval --task` was given it."),
    ] = None,
    device: Annotated[str, typer.Option(help="Where the model runs: cpu, cuda, cuda:1, ...")] = "cpu",
    force: Annotated[
        bool, typer.Option("--force", help="Audit a run that fails verify (its verdict is marked UNVERIFIED).")
    ] = False,
) -> None:
    """Re-evaluate the checkpoints that decide the score with the recorded settings; compare every sample.

    Per step: reproduced (every completion hash and the accuracy, bit for bit), differs (the first
    difference), or missing evidence. Writes no event; the report goes to derived/audit.json.
    Exit 0 when every step is reproduced, 1 otherwise, 2 for bad input (or a run never evaluated).
    """
    from evaluator.auditing.audit import AuditOptions, audit_run, parse_steps
    from evaluator.errors import AuditFailed

    options = AuditOptions(
        steps=parse_steps(steps) if steps is not None else None,
        workers=workers,
        ray_address=ray_address,
        batch_size=batch_size,
        task=task,
        device=device,
        force=force,
    )
    with UntilFirst("audit: verifying the run, loading torch and the model") as waiting:

        def on_step(s: StepAudit) -> None:
            waiting.done()
            _print_step(s)

        report = audit_run(run_dir, options, on_step=on_step)
    _print_summary(report)
    if not report.reproduced:
        failed = [s for s in report.steps if s.status != "reproduced"]
        raise AuditFailed(
            f"{len(failed)} of {len(report.steps)} audited evaluation(s) not reproduced ("
            + ", ".join(f"step {s.step}: {s.status}" for s in failed)
            + "): re-evaluating the recorded checkpoint does not confirm the record"
        )


def _print_step(s: StepAudit) -> None:
    if s.status == "reproduced":
        console.print(
            line(
                f"step {s.step}:",
                label("reproduced", "green"),
                f"bit for bit ({s.samples} samples, accuracy {s.recomputed_accuracy!r}) in {s.seconds:.1f} s",
            )
        )
    else:
        console.print(line(f"step {s.step}:", label(s.status.upper(), "bold red"), s.detail))


def _print_summary(r: AuditReport) -> None:
    if r.unverified:
        console.print(
            line(label("UNVERIFIED:", "bold red"), f"audited with --force a run that fails verify ({r.unverified[0]})")
        )
    done = sum(s.status == "reproduced" for s in r.steps)
    head = f"run {r.run_id}: {done} of {len(r.steps)} evaluation(s) reproduced, with {r.workers}"
    console.print(head + (f"; report in {r.written}" if r.written else ""), highlight=False)
    if r.not_written:
        console.print(warning(f"no report written: {r.not_written}"))


def register(app: typer.Typer) -> None:
    app.command(name="audit")(audit_command)
