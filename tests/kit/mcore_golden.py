"""The golden NeMo-RL series that the real megatron-core wrote (tests/golden/mcore/, by
tests/fixtures/make_mcore.py): where they are, and a working copy of one as a submitter has it.

A copy's files get the modification time a save finishing WRITE_MS after the step's weight update leaves
(git keeps no modification times); the committed files are never touched."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.kit.sample_series import WRITE_MS

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "mcore"
SERIES = ("dense-tp1", "dense-tp2", "moe", "hybrid", "dense-pp2", "moe-ep2")
# a series saved by pipeline stages or with its experts spread over ranks -> the same weights saved by one rank
TWINS = {"dense-pp2": "dense-tp1", "moe-ep2": "moe"}
STEPS = (18, 19)
ITERATION = Path("policy") / "weights" / "iter_0000000"


def model_config(kind: str) -> Path:
    """The base model's Hugging Face config directory (a NeMo-RL Megatron series holds none)."""
    return GOLDEN / f"{kind}.hf-config"


def tokenizer() -> Path:
    return GOLDEN / "tokenizer"


def logits_file(kind: str) -> Path:
    return GOLDEN / f"{kind}.logits.safetensors"


def copy_series(kind: str, into: Path) -> Path:
    """A working copy of series `kind` at `into`, its files dated as the save left them."""
    shutil.copytree(GOLDEN / kind, into)
    for step_dir in into.glob("step_*"):
        info = json.loads((step_dir / "training_info.json").read_text())
        written_ns = (info["training_step_end_time_ms"] + WRITE_MS) * 1_000_000
        for f in step_dir.rglob("*"):
            if f.is_file():
                f.chmod(0o644)
                os.utime(f, ns=(written_ns, written_ns))
    return into
