"""`recorder train`: GRPO under the 6.1 checkpoint rule, every fact recorded as an event.

Only typer at module level: torch and the trainer load inside the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def train(
    config: Annotated[Path | None, typer.Option("--config", help="A TOML or JSON file of settings.")] = None,
    root: Annotated[Path, typer.Option("--root", help="Where runs live.")] = Path("runs"),
    run_id: Annotated[str | None, typer.Option("--run-id", help="The run's id (default: time + random).")] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="KEY=VALUE override, dotted keys (checkpoint.sync=true, model=smollm2-135m). Repeatable."
        ),
    ] = None,
    ray: Annotated[bool, typer.Option("--ray", help="Rollout workers as Ray actors (local cluster).")] = False,
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="Use the running Ray cluster at this address (implies --ray).")
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Continue this stopped or killed run from its last committed checkpoint (weights; "
            "the optimizer starts fresh), in a new segment, with its recorded config.",
        ),
    ] = None,
) -> None:
    """Train with GRPO; checkpoints from the validation start step to the final step; prints the run dir."""
    from trainer.config import load_config
    from trainer.loop import GRPOTrainer
    from trainer.progress import Progress

    use_ray = ray or ray_address is not None
    if resume is not None:
        from trainer.resume import ResumedTrainer, ResumeError, plan_resume

        if config is not None or sets or run_id is not None:
            raise ResumeError("--resume continues a run with its recorded config: drop --config, --set and --run-id")
        plan = plan_resume(resume)
        cfg = plan.config
        typer.echo(
            f"resuming {plan.run.path} after step {plan.step} from {plan.checkpoint.name} "
            "(weights restored; optimizer re-initialised)"
        )
        with Progress(cfg.max_steps, cfg.validation_start) as progress:
            summary = ResumedTrainer(plan, use_ray=use_ray, ray_address=ray_address, on_step=progress).run()
    else:
        cfg = load_config(config, sets)
        with Progress(cfg.max_steps, cfg.validation_start) as progress:
            trainer = GRPOTrainer(
                cfg, root=root, run_id=run_id, use_ray=use_ray, ray_address=ray_address, on_step=progress
            )
            summary = trainer.run()
    w = summary.warmup
    if w is not None:
        typer.echo(
            f"init: warm-up {'cached' if w.cached else 'trained'} ({w.batches} batches, "
            f"dev pass@{cfg.eval.k} {w.dev_accuracy:.3f})"
        )
    steps = summary.steps
    typer.echo(
        f"trained {len(steps)} steps ({cfg.global_batch_size} samples each), "
        f"mean step {sum(s.step_s for s in steps) / max(1, len(steps)):.2f} s; "
        f"checkpoints {', '.join(str(c.step) for c in summary.checkpoints)}"
    )
    typer.echo(f"run: {summary.run.path}")
    typer.echo(f"next: recorder eval {summary.run.path}")


def register(app: typer.Typer) -> None:
    app.command()(train)
