"""A model built by the team's own code under --model-code: its provenance, and a shadowed module refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from recorder.checkpoints.evaluable import load_checkpoint
from tests.checkpoints import fixtures
from trainer.policy.errors import ModelCodeError

FACTORY = """
from transformers import LlamaConfig, LlamaForCausalLM

from {pkg}.layers import scale


def build(config, *, capacity=True):
    assert scale() == 1 and capacity
    cfg = dict(config)
    cfg.pop("model_type", None)
    return LlamaForCausalLM(LlamaConfig(**cfg))
"""


def _tree(root: Path, pkg: str) -> Path:
    (root / pkg).mkdir(parents=True)
    (root / pkg / "__init__.py").write_text("")
    (root / pkg / "model.py").write_text(FACTORY.format(pkg=pkg))
    (root / pkg / "layers.py").write_text("def scale():\n    return 1\n")
    (root / "unused.py").write_text("raise RuntimeError('never imported')\n")
    return root


def test_the_factory_builds_the_model_and_its_provenance_lists_what_was_imported(tmp_path: Path) -> None:
    tok, model = fixtures.tiny()
    snap = fixtures.write_snapshot(tmp_path / "run", 2, tok, model)
    root = _tree(tmp_path / "code", "teammoe_a")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "model"], cwd=root, check=True)
    (root / "teammoe_a" / "layers.py").write_text("def scale():\n    return 1  # edited\n")
    loaded = load_checkpoint(snap, dtype="fp32", model_code=root, model_factory="teammoe_a.model:build")
    assert torch.equal(fixtures.logits(loaded.model, [1, 5, 9]), fixtures.logits(model, [1, 5, 9]))
    prov = loaded.provenance
    assert prov is not None
    assert [p for p, _ in prov.files] == ["teammoe_a/__init__.py", "teammoe_a/layers.py", "teammoe_a/model.py"]
    import hashlib

    assert (
        dict(prov.files)["teammoe_a/layers.py"]
        == hashlib.sha256((root / "teammoe_a/layers.py").read_bytes()).hexdigest()
    )
    assert prov.git_commit is not None and len(prov.git_commit) == 40
    assert prov.git_dirty is True


def test_a_module_shadowed_from_outside_the_tree_aborts_naming_it(tmp_path: Path) -> None:
    tok, model = fixtures.tiny()
    snap = fixtures.write_snapshot(tmp_path / "run", 2, tok, model)
    root = _tree(tmp_path / "code", "teammoe_b")
    elsewhere = _tree(tmp_path / "installed", "teammoe_b")
    sys.path.insert(0, str(elsewhere))
    try:
        __import__("teammoe_b.layers")  # an installed copy already loaded: the tree's would never run
    finally:
        sys.path.remove(str(elsewhere))
    with pytest.raises(ModelCodeError, match=r"module teammoe_b(\.layers)? is imported from .*installed"):
        load_checkpoint(snap, dtype="fp32", model_code=root, model_factory="teammoe_b.model:build")


def test_a_factory_without_its_tree_is_a_usage_error(tmp_path: Path) -> None:
    tok, model = fixtures.tiny()
    snap = fixtures.write_snapshot(tmp_path / "run", 2, tok, model)
    with pytest.raises(ModelCodeError, match="needs --model-code"):
        load_checkpoint(snap, dtype="fp32", model_factory="x.y:build")
