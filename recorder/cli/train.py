"""`recorder train`: GRPO under the 6.1 checkpoint rule, every fact recorded as an event.

Only typer at module level: torch and the trainer load inside the command.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from recorder.cli.shared.paths import check_root
from recorder.cli.shared.signing_keys import SigningKeyOption, apply_signing_key
from recorder.cli.terminal.heartbeat import Heartbeat
from recorder.cli.terminal.output import at_spaces, console, err
from recorder.errors import RecorderError

if TYPE_CHECKING:
    from trainer.config import TrainConfig
    from trainer.loop import GRPOTrainer, StepResult, TrainSummary
    from trainer.parallel.distributed import Ranks
    from trainer.progress import Progress


class TrainInterrupted(RecorderError):
    """Ctrl-C during `recorder train`: the run is stopped and recorded; exit 130."""

    exit_code = 130


_ConfigOpt = Annotated[Path | None, typer.Option("--config", help="A TOML or JSON file of settings.")]
_RootOpt = Annotated[Path, typer.Option("--root", envvar="RECORDER_ROOT", help="Where runs live.")]
_RunIdOpt = Annotated[str | None, typer.Option("--run-id", help="The run's id (default: time + random).")]
_SetsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set", help="KEY=VALUE override, dotted keys (checkpoint.sync=true, model=smollm2-135m). Repeatable."
    ),
]
_RayOpt = Annotated[bool, typer.Option("--ray", help="Rollout workers as Ray actors (local cluster).")]
_RayAddressOpt = Annotated[
    str | None, typer.Option("--ray-address", help="Use the running Ray cluster at this address (implies --ray).")
]
_ListSettingsOpt = Annotated[
    bool, typer.Option("--list-settings", help="Print every --set option (key, type, default, meaning) and exit.")
]
_NprocOpt = Annotated[
    int,
    typer.Option(
        "--nproc",
        min=1,
        help="Train data-parallel in N processes on this machine (torchrun --standalone; FSDP2, gloo on the CPU).",
    ),
]
_ResumeOpt = Annotated[
    Path | None,
    typer.Option(
        "--resume",
        help="Continue this stopped or killed run from its last committed checkpoint (weights; "
        "the optimizer starts fresh), in a new segment, with its recorded config.",
    ),
]


def train(
    config: _ConfigOpt = None,
    root: _RootOpt = Path("runs"),
    run_id: _RunIdOpt = None,
    sets: _SetsOpt = None,
    ray: _RayOpt = False,
    ray_address: _RayAddressOpt = None,
    list_settings: _ListSettingsOpt = False,
    nproc: _NprocOpt = 1,
    resume: _ResumeOpt = None,
    signing_key: SigningKeyOption = None,
) -> None:
    """Train with GRPO; checkpoints from the validation start step to the final step; prints the run dir.

    Ctrl-C stops the run (its train_stop is recorded) and exits 130; `--resume RUN` continues it.
    Under `torchrun --nproc-per-node N -m recorder.cli train ...` it trains data-parallel (rank 0 prints).
    The tiny model trains with pinned CPU kernels: one run on every CPU kernel set (RECORDER_CPU_KERNELS).
    """
    from recorder.store.run import check_run_id
    from trainer.parallel.distributed import DistributedError, launched_ranks

    if list_settings:
        from recorder.cli.shared.settings import print_settings

        print_settings()
        return
    ranks = launched_ranks()
    if (ranks.distributed or nproc > 1) and (resume is not None or ray or ray_address is not None):
        raise DistributedError("data-parallel training (torchrun) takes neither --resume nor --ray")
    if run_id is not None:
        check_run_id(run_id)  # before torch loads
    if resume is None:
        check_root(root)
    else:
        from recorder.store.run import RunDir

        RunDir.open(resume)  # a run to resume, before torch loads
    apply_signing_key(signing_key)  # every rank signs its own segment
    if nproc > 1 and not ranks.distributed:
        from recorder.cli.shared.launch import launch_data_parallel

        raise typer.Exit(launch_data_parallel(nproc, config, sets, root, run_id))
    if not ranks.is_main:  # rank 0 speaks for the run; the others only train and record their own segment
        _train_rank(ranks, config, sets, root, run_id)
        return
    try:
        _train_main(ranks, config, sets, root, run_id, resume, ray or ray_address is not None, ray_address)
    except KeyboardInterrupt:  # before the trainer runs (loading torch, the model): nothing was recorded yet
        raise TrainInterrupted("train: interrupted while starting; nothing was recorded") from None


def _train_main(
    ranks: Ranks,
    config: Path | None,
    sets: list[str] | None,
    root: Path,
    run_id: str | None,
    resume: Path | None,
    use_ray: bool,
    ray_address: str | None,
) -> None:
    """Rank 0 (or the one process): validate, say that it starts, train, and say where the run is."""
    from recorder.cli.terminal.progress import terminal_bar
    from trainer.progress import Progress

    trainer = _trainer(config, sets, root, run_id, resume, ranks, use_ray, ray_address)
    cfg = trainer.cfg
    _print_trained(_run(trainer, Progress(cfg.max_steps, cfg.validation_start, bar=terminal_bar)), cfg)


def _trainer(
    config: Path | None,
    sets: list[str] | None,
    root: Path,
    run_id: str | None,
    resume: Path | None,
    ranks: Ranks,
    use_ray: bool,
    ray_address: str | None,
) -> GRPOTrainer:
    """The trainer the options ask for: a resumed run, one rank of a data-parallel run, or a fresh run."""
    from trainer.config import load_config
    from trainer.policy.kernels import wants_pinned

    if resume is not None:
        from trainer.resume import ResumeError

        if config is not None or sets or run_id is not None:
            raise ResumeError("--resume continues a run with its recorded config: drop --config, --set and --run-id")
    cfg = load_config(config, sets) if resume is None else None  # every config error comes before the wait
    if cfg is not None:
        wants_pinned(cfg.model, cfg.rollout)  # a RECORDER_CPU_KERNELS it does not know, likewise
    err.print("train: starting (loading torch and the model; a new seed's warm-up takes about two minutes)")
    from trainer.loop import GRPOTrainer

    if resume is not None:
        from trainer.resume import plan_resume

        plan = plan_resume(resume)
        typer.echo(
            f"resuming {plan.run.path} after step {plan.step} from {plan.checkpoint.name} "
            "(weights restored; optimizer re-initialised)"
        )
        return GRPOTrainer.resuming(plan, use_ray=use_ray, ray_address=ray_address)
    assert cfg is not None
    if ranks.distributed:
        from trainer.parallel.data_parallel import DataParallelTrainer

        trainer = DataParallelTrainer(cfg, ranks=ranks, root=root, run_id=run_id)
        err.print(f"train: data parallel over {ranks.world_size} processes (FSDP2); rank 0 records the run")
        return trainer
    return GRPOTrainer(cfg, root=root, run_id=run_id, use_ray=use_ray, ray_address=ray_address)


def _print_trained(summary: TrainSummary, cfg: TrainConfig) -> None:
    w = summary.warmup
    if w is not None:
        source = "shipped with recorder" if w.shipped else "cached" if w.cached else "trained"
        typer.echo(f"init: warm-up {source} ({w.batches} batches, dev pass@{cfg.eval.k} {w.dev_accuracy:.3f})")
    steps = summary.steps
    run, follow = str(summary.run.path), f"recorder eval {summary.run.path}"
    lines = [
        f"trained {len(steps)} steps ({cfg.global_batch_size} samples each), "
        f"mean step {sum(s.step_s for s in steps) / max(1, len(steps)):.2f} s; "
        f"checkpoints {', '.join(str(c.step) for c in summary.checkpoints)}",
        f"run: {run}",
        f"next: {follow}",
    ]
    # on a terminal each line breaks at spaces, never inside the run's path or the command to run next
    console.print(at_spaces("\n".join(lines), console, whole=[run, follow]), soft_wrap=True)


def _train_rank(ranks: Ranks, config: Path | None, sets: list[str] | None, root: Path, run_id: str | None) -> None:
    """A data-parallel rank other than 0: trains its share silently (rank 0 reports errors and progress)."""
    from trainer.config import load_config
    from trainer.parallel.data_parallel import DataParallelTrainer

    trainer = DataParallelTrainer(load_config(config, sets), ranks=ranks, root=root, run_id=run_id)
    try:
        trainer.run()
    except KeyboardInterrupt:
        raise typer.Exit(130) from None  # rank 0 says where the run stopped: one line, not one per rank


def _run(trainer: GRPOTrainer, progress: Progress) -> TrainSummary:
    """Run the trainer with progress: a bar on a terminal; on a pipe a line per step, and a heartbeat line until
    step 1 that says what the warm-up is at. Ctrl-C becomes TrainInterrupted."""
    beats = Heartbeat(err) if not progress.tty else nullcontext(None)  # on a terminal the bar says it live
    with beats as heartbeat, progress:
        stop, k = trainer.cfg.warmup.stop_dev_accuracy, trainer.cfg.eval.k

        def on_warmup(batches: int, accuracy: float) -> None:
            progress.warming(f"warm-up batch {batches}, dev {accuracy:.2f} of {stop:.2f}")
            if heartbeat is not None:
                heartbeat.status = f"warming up: batch {batches}, dev pass@{k} {accuracy:.2f} (stops at {stop:.2f})"

        def on_step(result: StepResult, checkpoints: int) -> None:
            if heartbeat is not None:
                heartbeat.stop()
            progress(result, checkpoints)

        trainer.on_warmup, trainer.on_step = on_warmup, on_step
        try:
            return trainer.run()
        except KeyboardInterrupt:
            pass
    raise _interrupted(trainer)


def _interrupted(trainer: GRPOTrainer) -> TrainInterrupted:
    run_dir = getattr(trainer, "run_dir", None)
    if run_dir is None:
        return TrainInterrupted("interrupted before the run was created; nothing was recorded")
    step = (trainer.last_step or 0) + 1
    summary = getattr(trainer, "summary", None)
    # a resumed run started from a committed checkpoint, so it can be resumed again even before its own first
    committed = bool(summary and summary.checkpoints) or getattr(trainer, "plan", None) is not None
    if not committed:
        return TrainInterrupted(
            f"interrupted at step {step}, before the first checkpoint: {run_dir.path} cannot be resumed "
            "(it is kept, with train_stop status interrupted); start again with `recorder train`"
        )
    if trainer.sharded_checkpoints():  # what plan_resume refuses: no consolidated weights to load
        return TrainInterrupted(
            f"interrupted at step {step}: {run_dir.path} cannot be resumed: its checkpoints are sharded (one part "
            "per rank) and `recorder train --resume` loads consolidated ones; it is kept: evaluate its checkpoints "
            f"with `recorder eval {run_dir.path}`, or start a new run (`--set checkpoint.format=safetensors` makes "
            "it resumable)"
        )
    if trainer.ranks.distributed:  # torchrun takes no --resume: the run goes on in one process
        return TrainInterrupted(
            f"interrupted at step {step}; resume in one process (data-parallel training takes no --resume) "
            f"with: recorder train --resume {run_dir.path}"
        )
    return TrainInterrupted(f"interrupted at step {step}; resume with: recorder train --resume {run_dir.path}")


def register(app: typer.Typer) -> None:
    app.command()(train)
