"""A small pretraining run as a team writes it, for the zero-shot tests: run under
`torchrun --nproc-per-node 2 train_tiny.py ROOT` (gloo, CPU). FSDP2-sharded tiny Llama, torch DCP
snapshots and final checkpoint, eval/loss logged to tensorboard_scalars.json and a TensorBoard event file,
then an fsdp2_epoch_1/ archive of the final checkpoint. Its eval loss is computed here, per rank, reduced
over the process group: independently of the evaluator's recomputation."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

CHARS = "abcdefghijklmnopqrstuvwxyz .,?'"
SEQ_LEN, EVAL_TOKENS, STEPS, EVAL_EVERY, BATCH_ROWS = 32, 1024, 20, 10, 4
WORDS = "the a cat dog sun tree runs sees eats big small red blue over under near water stone".split()


def sentences(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9))) + "." for _ in range(n)]


def noise(seed: int, n: int) -> list[str]:
    """Long documents of random letters: much harder than the sentences, so that how documents are packed
    into each rank's rows (the world size) shows in the loss."""
    rng = random.Random(seed)
    return ["".join(rng.choice(CHARS[:26]) for _ in range(rng.randint(100, 140))) for _ in range(n)]


def model_config(vocab: int) -> dict[str, object]:
    return {
        "model_type": "llama",
        "vocab_size": vocab,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "max_position_embeddings": 256,
        "tie_word_embeddings": False,
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def rows_of(docs: list[list[int]], rank: int, world: int) -> list[list[int]]:
    stream = [t for d in docs[rank::world] for t in d]
    return [stream[i : i + SEQ_LEN + 1] for i in range(0, len(stream) - SEQ_LEN, SEQ_LEN + 1)]


def eval_loss(model: torch.nn.Module, docs: list[list[int]], rank: int, world: int) -> float:
    rows = rows_of(docs, rank, world)[: EVAL_TOKENS // (world * SEQ_LEN)]
    batch = torch.tensor(rows)
    with torch.no_grad():
        logits = model(input_ids=batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).double(), batch[:, 1:].reshape(-1)
        )
    mean = torch.tensor([float(loss)], dtype=torch.float64)
    dist.all_reduce(mean)
    return float(mean) / world


def save(model: torch.nn.Module, where: Path, meta: dict[str, object], name: str = "meta.json") -> None:
    dcp.save(model.state_dict(), checkpoint_id=str(where))
    if dist.get_rank() == 0:
        (where / name).write_text(json.dumps(meta))


def main(root: Path) -> None:
    from torch.distributed.fsdp import fully_shard
    from transformers import LlamaConfig, LlamaForCausalLM

    from trainer.policy.tokenizer import CharTokenizer

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    run = root / "run"
    tok = CharTokenizer(CHARS)
    encode = lambda texts: [tok.encode(t) + [tok.eos_id] for t in texts]
    train = encode(sentences(1, 400))
    holdout = [doc for pair in zip(sentences(2, 60), noise(3, 60), strict=True) for doc in pair]
    if rank == 0:
        (run / "data").mkdir(parents=True)
        (run / "tokenizer").mkdir()
        (run / "data/holdout.txt").write_text("\n".join(holdout) + "\n")
        (run / "tokenizer/tokenizer.json").write_text(tok.to_json())
        (run / "config.json").write_text(json.dumps(model_config(tok.vocab_size), indent=1))
        training = {
            "data": {"holdout": "data/holdout.txt", "seq_len": SEQ_LEN},
            "eval": {"tokens": EVAL_TOKENS},
            "world_size": world,
        }
        (run / "training.json").write_text(json.dumps(training, indent=1))
    dist.barrier()
    torch.manual_seed(0)
    fields = {k: v for k, v in model_config(tok.vocab_size).items() if k != "model_type"}
    model = LlamaForCausalLM(LlamaConfig(**fields))
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rows = rows_of(train, rank, world)
    logged: list[dict[str, float]] = []
    writer = None
    if rank == 0:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(str(run / "tb"))
    for step in range(1, STEPS + 1):
        batch = torch.tensor(rows[(step - 1) * BATCH_ROWS : step * BATCH_ROWS])
        loss = model(input_ids=batch[:, :-1], labels=batch[:, :-1].clone()).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % EVAL_EVERY == 0:
            value = eval_loss(model, encode(holdout), rank, world)
            logged.append({"step": step, "value": value})
            if writer is not None:
                writer.add_scalar("eval/loss", value, step)
            save(
                model,
                run / "snapshots" / f"step_{step}",
                {"step": step, "source_world_size": world},
                "snapshot_meta.json",
            )
    save(model, run, {"step": STEPS})
    if rank == 0:
        assert writer is not None
        writer.close()
        (run / "tensorboard_scalars.json").write_text(json.dumps({"eval/loss": logged}, indent=1))
        archive = root / "fsdp2_epoch_1"
        archive.mkdir()
        for f in [run / ".metadata", *run.glob("__*_0.distcp")]:
            shutil.copy2(f, archive / f.name)
        shutil.copy2(run / "config.json", archive / "config.json")
        (archive / "final_meta.json").write_text(
            json.dumps({"source": str(run), "step": STEPS, "source_world_size": world})
        )
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
