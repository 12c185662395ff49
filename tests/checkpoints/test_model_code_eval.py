"""`recorder eval --model-code ROOT --model-factory package.module:build`: the team's model scores the run,
results.json records the code it imported, and a package shadowed from outside the tree aborts naming it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.evaluator.synth import record_run
from tests.helpers import run_cli

FACTORY = """
from transformers import LlamaConfig, LlamaForCausalLM


def build(config, *, capacity=True):
    cfg = dict(config)
    cfg.pop("model_type", None)
    return LlamaForCausalLM(LlamaConfig(**cfg))
"""


def _tree(root: Path, package: str) -> Path:
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text("")
    (root / package / "model.py").write_text(FACTORY)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m"], cwd=root, check=True)
    return root


def test_the_factory_model_scores_and_its_code_is_recorded(tmp_path: Path) -> None:
    run = record_run(tmp_path, target=-1.0, samples=2)
    root = _tree(tmp_path / "code", "teammodel")
    done = run_cli("eval", str(run.path), "--model-code", str(root), "--model-factory", "teammodel.model:build")
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((run.path / "derived" / "evals" / "step_0000018" / "results.json").read_text())
    code = doc["backend"]["model_code"]
    assert [f["path"] for f in code["files"]] == ["teammodel/__init__.py", "teammodel/model.py"]
    assert all(len(f["sha256"]) == 64 for f in code["files"])
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    assert (code["git_commit"], code["git_dirty"]) == (head, False)


def test_a_package_loaded_from_outside_the_tree_aborts_naming_it(tmp_path: Path) -> None:
    run = record_run(tmp_path, target=-1.0, samples=2)
    # the tree has its own `trainer` package, but the recorder's own `trainer` is already imported
    root = _tree(tmp_path / "code", "trainer")
    done = run_cli("eval", str(run.path), "--model-code", str(root), "--model-factory", "trainer.model:build")
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "module trainer" in errors[0] and "outside --model-code" in done.stderr, done.stderr
