"""The holdout loss as the training computes it: each rank packs its own documents into rows and averages
its token losses; eval/loss is the mean over ranks. The world size therefore changes the value.

Rank r takes documents r, r+W, r+2W, ... (one per line; tokens of each, then <eos>), concatenates them and
cuts rows of seq_len+1 tokens (input: the first seq_len, labels: the last seq_len; a team that declares
`windows = "shifted"` cuts them every seq_len tokens, each row's last label the next row's first input, and
one that declares `bos = true` begins each document with the BOS); it keeps the first
tokens // (W * seq_len) rows and drops the rest. Rows go through the model `batch_rows` at a time (MoE capacity
is counted per forward pass, so the batches are training's), in the parameter dtype and with the capacity
setting the job built the model with (training's: docs/zero-shot.md, "The holdout check").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evaluator.harness.model_call import logits as model_logits
from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.origin.training_run import HoldoutPlan, holdout_bytes
from recorder.untrusted.bounded_documents import unique_keys
from trainer.policy.tokenizer import Tokenizer


def documents(path: Path, content: bytes | None = None) -> list[str]:
    """One document per non-empty line of `content` (the file's bytes as the plan read them; read here when
    not given); a JSON-lines file gives each record's "text"."""
    try:
        text = (content if content is not None else holdout_bytes(path)).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ZeroShotInputError(f"{path}: cannot read the holdout data ({e}); point --holdout-data at it") from e
    lines = [line for line in text.splitlines() if line.strip()]
    if path.suffix != ".jsonl":
        return lines
    docs = []
    for number, line in enumerate(lines, 1):
        try:
            docs.append(str(json.loads(line, object_pairs_hook=unique_keys)["text"]))
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise ZeroShotInputError(
                f'{path}: record {number} is not a JSON object with a "text" field ({type(e).__name__}: {e})'
            ) from e
    return docs


def rank_rows(docs: list[list[int]], plan: HoldoutPlan) -> list[list[list[int]]]:
    """[W][rows][seq_len+1]: each rank's packed rows within the token budget."""
    per_rank = plan.tokens // (plan.world_size * plan.seq_len)
    out = []
    for rank in range(plan.world_size):
        stream = [t for doc in docs[rank :: plan.world_size] for t in doc]
        width = plan.seq_len + 1
        stride = plan.seq_len if plan.shifted else width
        rows = [stream[i : i + width] for i in range(0, len(stream) - width + 1, stride)]
        out.append(rows[:per_rank])
    return out


def holdout_loss(model: Any, tokenizer: Tokenizer, plan: HoldoutPlan, *, batch_size: int) -> float:
    """eval/loss of `model` on the plan's holdout data (mean over ranks of each rank's mean token loss)."""
    import torch

    first = [tokenizer.bos_id] if plan.bos else []
    docs = [first + tokenizer.encode(d) + [tokenizer.eos_id] for d in documents(plan.data, plan.content)]
    ranks = rank_rows(docs, plan)
    if any(not rows for rows in ranks):
        raise ZeroShotInputError(
            f"{plan.data}: too little text for one row of {plan.seq_len + 1} tokens on each of "
            f"{plan.world_size} ranks; give --holdout-data the run's holdout set, or --holdout off"
        )
    device = next(model.parameters()).device
    rows_per_pass = plan.batch_rows or batch_size
    means = []
    model.eval()
    with torch.inference_mode():
        for rows in ranks:
            total, count = 0.0, 0
            for s in range(0, len(rows), rows_per_pass):
                batch = torch.tensor(rows[s : s + rows_per_pass], device=device)
                logits = model_logits(model, batch[:, :-1]).double()
                loss = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1), reduction="sum"
                )
                total, count = total + float(loss), count + batch[:, 1:].numel()
            means.append(total / count)
    return sum(means) / len(means)
