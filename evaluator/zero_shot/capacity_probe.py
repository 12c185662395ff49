"""Whether a model built with MoE capacity off really scores each row on its own: the same rows are run
alone and among copies of themselves, and their logits must agree. With a capacity limit, the copies fill
each expert's queue, so a row's tokens are dropped in one batch and kept in the other; without one, only
the float order of the kernels differs (a few ulps)."""

from __future__ import annotations

from typing import Any

from evaluator.harness.model_call import logits as model_logits
from recorder.checkpoints.capacity_switch import WAYS
from trainer.policy.errors import ModelCodeError

ROW = 16  # tokens per probe row
COPIES = 6  # copies of each row beside the originals: enough to fill any expert's queue past its share
TOLERANCE = 1e-3  # of the logits' scale: kernels' float order moves them by ~1e-6, a dropped expert by units


def confirm_capacity_off(model: Any, spec: str, *, switched: bool = True) -> str:
    """What was checked, in words; ModelCodeError naming the ways to switch capacity when a row's logits
    change with the rows beside it. The rows are fixed pseudo-random token ids of the model's vocabulary."""
    import torch

    device = next(model.parameters()).device
    with torch.inference_mode():
        vocab = int(model_logits(model, torch.zeros(1, 1, dtype=torch.long, device=device)).shape[-1])
        rows = torch.randint(0, vocab, (2, ROW), generator=torch.Generator().manual_seed(0)).tolist()
        batch = torch.tensor([*rows, *(r for r in rows for _ in range(COPIES))], device=device)
        together = model_logits(model, batch).float()
        for i in range(len(rows)):
            alone = model_logits(model, batch[i : i + 1]).float()[0]
            scale = max(1.0, float(alone.abs().max()))
            for j in [i, *range(len(rows) + i * COPIES, len(rows) + (i + 1) * COPIES)]:
                gap = float((together[j] - alone).abs().max())
                if gap > TOLERANCE * scale:
                    how = "built with MoE capacity off" if switched else "with no capacity switch declared"
                    raise ModelCodeError(
                        f"--model-factory {spec}: {how}, a row's logits still change with the rows beside it (by "
                        f"{gap:.3g}): capacity is on; switch it off through {WAYS}, or pass --moe-capacity to "
                        "score with it on"
                    )
    return f"a row's logits alone and among {len(batch)} rows agree within {TOLERANCE:g} of their scale"
