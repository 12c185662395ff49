"""Fixtures: a small pretraining run written by real torch.distributed.checkpoint under torchrun (two ranks,
gloo, CPU), and a local Hugging Face datasets directory for the seven tasks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.datasets_cache import make_cache

TRAIN = Path(__file__).with_name("train_tiny.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def pretraining(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """<root>/run (final DCP checkpoint, snapshots/step_10, step_20, logs) and <root>/fsdp2_epoch_1/, trained once."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    root = tmp_path_factory.mktemp("pretraining")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    done = subprocess.run([*torchrun, str(TRAIN), str(root)], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


@pytest.fixture
def training(pretraining: Path, tmp_path: Path) -> Path:
    """A copy of the pretraining root for a test that changes it (the archive's source points at the copy)."""
    import json

    root = tmp_path / "pretraining"
    shutil.copytree(pretraining, root, symlinks=True)
    meta = root / "fsdp2_epoch_1" / "final_meta.json"
    meta.write_text(json.dumps(json.loads(meta.read_text()) | {"source": str(root / "run")}))
    return root


@pytest.fixture(scope="session")
def hf_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("datasets")
    return make_cache(tmp_path_factory.mktemp("hf-datasets"))
