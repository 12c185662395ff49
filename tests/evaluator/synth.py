"""Small synthetic runs for evaluator tests: real tiny-model checkpoints written with the trainer's own
functions, and the training events that commit them, recorded with recorder.log.LogWriter.

The models are random (untrained), so pass@k is 0: the tests choose the run's `eval.target` to decide
what passes (-1: everything, 1: nothing), which exercises the evaluator's logic without a training run.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from recorder.kinds import CheckpointCommitted, RunOpened, RunStart, TrainStop, WeightUpdate
from recorder.log import LogWriter
from recorder.run import RunDir

S = 1_000_000_000
T0 = 1_780_000_000 * S


def eval_config(target: float = 0.69, samples: int = 8, k: int = 4, max_new_tokens: int = 3) -> dict[str, Any]:
    return {
        "k": k,
        "temperature": 0.1,
        "top_p": 0.95,
        "target": target,
        "max_new_tokens": max_new_tokens,
        "samples": samples,
    }


@functools.cache
def _tiny_checkpoint_parts(init_seed: int, sharpen: float) -> tuple[dict[str, Any], str, str, dict[str, Any]]:
    from trainer.policy.fingerprint import fingerprint_record
    from trainer.policy.model import ModelConfig, build_model
    from trainer.policy.tokenizer import CharTokenizer

    cfg = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, init_seed=init_seed)
    model = build_model(cfg)
    # Sharpen the random model's predictions, so that which id means which character (the tokenizer) and
    # the config change its fingerprint by far more than the tolerance, as they do for a trained model.
    model.lm_head.weight.data.mul_(sharpen)
    tok = CharTokenizer()
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    return tensors, model.config.to_json_string(), tok.to_json(), fingerprint_record(model, tok)


def write_tiny_checkpoint(
    directory: Path, step: int, weight_update_ns: int, init_seed: int = 0, sharpen: float = 40.0
) -> dict[str, Any]:
    """A real checkpoint directory (trainer format); returns its checkpoint_committed data (path unset)."""
    from trainer.policy.checkpoint_files import write_checkpoint

    tensors, config_json, tok_json, fp = _tiny_checkpoint_parts(init_seed, sharpen)
    directory.parent.mkdir(parents=True, exist_ok=True)
    sha, size = write_checkpoint(
        directory,
        tensors,
        config_json=config_json,
        tokenizer_json=tok_json,
        weight_update_ns=weight_update_ns,
        step=step,
    )
    return {"sha256": sha, "bytes": size, "fingerprint": fp, "format": "safetensors", "dtype": "float32"}


def record_run(
    root: Path,
    *,
    run_id: str = "run",
    gbs: int = 256,
    steps: int = 19,
    checkpoint_steps: list[int] | None = None,
    target: float = 0.69,
    samples: int = 8,
    files: bool = True,
    stopped: bool = True,
    paths: dict[int, str] | None = None,
    sharpen: float = 40.0,
) -> RunDir:
    """A run trained for `steps` steps of 60 s, committing checkpoints at `checkpoint_steps`
    (default: from the validation start on). `files=False` records the events only."""
    from recorder.rules import validation_start_step as validation_start

    run = RunDir.create(root, run_id)
    start = validation_start(gbs)
    cps = checkpoint_steps if checkpoint_steps is not None else list(range(start, steps + 1))
    with LogWriter(run, "trainer", clock=lambda: T0) as w:
        opened = RunOpened(
            benchmark="qwen35_397b_grpo",
            ruleset="6.1.0",
            division="open",
            global_batch_size=gbs,
            resumed_from=None,
            provenance={},
            config={"eval": eval_config(target, samples)},
        )
        w.append(opened)
        w.append(RunStart(), time_ns=T0)
        for step in range(1, steps + 1):
            update = T0 + 60 * step * S
            w.append(WeightUpdate(), step=step, samples_count=step * gbs, time_ns=update)
            if step in cps:
                rel = (paths or {}).get(step, f"checkpoints/step_{step:07d}")
                data: dict[str, Any] = {"sha256": "0" * 64, "bytes": 0, "fingerprint": {}}
                data.update(format="safetensors", dtype="float32")
                if files:
                    data = write_tiny_checkpoint(
                        run.path / f"checkpoints/step_{step:07d}", step, update, step % 2, sharpen
                    )
                data.update(
                    path=rel, weight_update_ns=update, save_begin_ns=update, save_end_ns=update + S, blocked_ns=S // 10
                )
                w.append(CheckpointCommitted(**data), step=step, samples_count=step * gbs, time_ns=update + S)
        if stopped:
            stop = TrainStop(status="completed", reason="")
            w.append(stop, step=steps, samples_count=steps * gbs, time_ns=T0 + (60 * steps + 5) * S)
    return run
