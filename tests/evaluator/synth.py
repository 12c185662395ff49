"""Small synthetic runs for evaluator tests: tests.kit.synthetic's run builder, with real tiny-model
checkpoints written with the trainer's own functions behind its commits.

The models are random (untrained), so pass@k is 0: the tests choose the run's `eval.target` to decide
what passes (-1: everything, 1: nothing), which exercises the evaluator's logic without a training run.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from recorder.store.run import RunDir
from tests.kit import synthetic


@functools.cache
def _tiny_checkpoint_parts(
    init_seed: int, sharpen: float, hidden_size: int = 32
) -> tuple[dict[str, Any], str, str, dict[str, Any]]:
    from recorder.checkpoints.fingerprint import fingerprint_record
    from trainer.policy.model import ModelConfig, build_model
    from trainer.policy.tokenizer import CharTokenizer

    # Two heads: head size hidden_size / 2 (vLLM's CPU attention needs at least 32, so hidden_size 64 there).
    cfg = ModelConfig(
        hidden_size=hidden_size, num_layers=1, num_heads=2, intermediate_size=2 * hidden_size, init_seed=init_seed
    )
    model = build_model(cfg)
    # Sharpen the random model's predictions, so that which id means which character (the tokenizer) and
    # the config change its fingerprint by far more than the tolerance, as they do for a trained model.
    model.lm_head.weight.data.mul_(sharpen)
    tok = CharTokenizer()
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    return tensors, model.config.to_json_string(), tok.to_json(), fingerprint_record(model, tok)


def write_tiny_checkpoint(
    directory: Path,
    step: int,
    weight_update_ns: int,
    init_seed: int = 0,
    sharpen: float = 40.0,
    hidden_size: int = 32,
) -> dict[str, Any]:
    """A real checkpoint directory (trainer format); returns its checkpoint_committed data (path unset)."""
    from recorder.checkpoints.recorder_format import write_checkpoint

    tensors, config_json, tok_json, fp = _tiny_checkpoint_parts(init_seed, sharpen, hidden_size)
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
    hidden_size: int = 32,
) -> RunDir:
    """tests.kit.synthetic's run (steps of 60 s, checkpoints from the validation start unless `checkpoint_steps`)
    with the evaluator's settings (`target`, `samples` tasks) and, unless `files=False`, a real tiny
    checkpoint behind every commit."""

    def tiny_checkpoint(run: RunDir, step: int, update: int) -> dict[str, Any]:
        if not files:
            return {"sha256": "0" * 64, "bytes": 0, "fingerprint": {}, "dtype": "float32"}
        directory = run.path / f"checkpoints/step_{step:07d}"
        return write_tiny_checkpoint(directory, step, update, step % 2, sharpen, hidden_size)

    if files:  # built before recording: building a model between two events would outrun their wall times
        for seed in (0, 1):
            _tiny_checkpoint_parts(seed, sharpen, hidden_size)
    return synthetic.record_run(
        root,
        run_id,
        gbs=gbs,
        steps=steps,
        target=target,
        eval_samples=samples,
        eval_max_new_tokens=3,
        checkpoint_steps=checkpoint_steps,
        checkpoint_paths=paths,
        checkpoint_data=tiny_checkpoint,
        stopped=stopped,
    )
