"""`recorder zero-shot` on three more teams' trees, each written and trained (torchrun, FSDP2, DCP model +
optimizer state) independently of this project and of each other, with its own keys, factory and layout:

- tests/fixtures/team_lumen: `build_lumen(LumenConfig)`, capacity a config field (`model.moe.use_capacity`),
  an epoch's step in `epoch_state.json` `global_step`, an archive whose `source` is relative to its root;
- tests/fixtures/team_quill: `QuillLM.build(**arch_kwargs(config))`, capacity a method of the module
  (`set_expert_capacity`), a model-only single-file archive, paths relative to its root;
- tests/fixtures/team_heron, held out: written after the declaration was built and scored with nothing changed
  in the recorder: `build_model(model_section, drop_overflow=...)`, capacity a factory keyword of its own name,
  an epoch's step in `trainer_state.json`.

Each is given only the `[tool.recorder]` table its pyproject.toml declares (run from its root, as its jobs
run): the run directory, a snapshot and the archive score with the holdout check on, and the archive's
scores equal lm-eval's own run on the same weights and data (tests/kit/lm_eval_direct.py, the model built
as the team's README says), with batch size 1 as with 32."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from recorder.results.zero_shot import ZeroShotResults
from tests.helpers import RECORDER

pytest.importorskip("lm_eval")
pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPO = FIXTURES.parents[1]
RELATIVE = 1e-6  # fp32 log-likelihoods agree to a few ulps; a changed token moves one by whole units


@dataclass(frozen=True)
class Tree:
    name: str
    run: str
    snapshot: str
    archive: str
    steps: tuple[int, int, int]  # the run's newest epoch, the snapshot, the archive


TREES = {
    "lumen": Tree(
        "lumen", "checkpoints/lumen-pretrain/moe-d32-e4-r1", "checkpoints/lumen-pretrain/moe-d32-e4-r1/"
        "snapshots/step_0000064", "checkpoints/archive/moe-d32-e4-r1-final", (78, 64, 78),
    ),
    "quill": Tree(
        "quill", "checkpoints/quill-tiny/moe-d32-e4", "checkpoints/quill-tiny/moe-d32-e4/snapshots/step_0000120",
        "archive/quill-tiny/moe-d32-e4", (140, 120, 140),
    ),
    "heron": Tree(
        "heron", "checkpoints/heron_pretrain/moe_tiny_r1", "checkpoints/heron_pretrain/moe_tiny_r1/snapshots/"
        "step_0000150", "archive/moe_tiny_r1_final", (194, 150, 194),
    ),
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(TREES))
def tree(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Tree, Path]:
    """A copy of the team's repository (the evaluator writes results into it), shared by the module."""
    name = request.param
    root = tmp_path_factory.mktemp(name) / name
    shutil.copytree(FIXTURES / f"team_{name}", root, ignore=shutil.ignore_patterns("__pycache__", "eval_results"))
    return TREES[name], root


def _zero_shot(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MODEL_CODE_ROOT", "EVAL_MODEL_FACTORY")}
    done = subprocess.run(
        [RECORDER, "zero-shot", *args, "--workers", "1"], capture_output=True, text=True, cwd=root, env=env,
        timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _docs(base: Path) -> list[ZeroShotResults]:
    return [ZeroShotResults.from_json(p.read_bytes()) for p in sorted(base.glob("*/results.json"))]


def test_the_run_a_snapshot_and_the_archive_score_with_only_the_declaration(
    tree: tuple[Tree, Path], hf_cache: Path
) -> None:
    t, root = tree
    out = root.parent / "quick"
    _zero_shot(root, t.run, t.snapshot, t.archive, "--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "3",
               "-o", str(out))  # fmt: skip
    docs = sorted(
        _docs(out), key=lambda d: [t.run, t.snapshot, t.archive].index(d.checkpoint.path[len(str(root)) + 1 :])
    )
    assert [d.checkpoint.kind for d in docs] == ["run", "snapshot", "archive"]
    assert tuple(d.checkpoint.step for d in docs) == t.steps
    for doc in docs:
        assert doc.holdout["mode"] == "on" and doc.holdout["passed"], doc.holdout
        assert doc.settings.capacity is False and doc.holdout["capacity"] is True
        assert doc.sources is not None and "agree" in doc.sources["capacity"]["confirmed"]
        assert doc.training_commit is not None and doc.training_commit["training"]
    assert docs[0].scores == docs[2].scores  # the run's newest epoch and its archive: the same weights


@pytest.mark.slow
def test_the_archive_s_scores_equal_lm_eval_run_directly_whatever_the_batch_size(
    tree: tuple[Tree, Path], hf_cache: Path
) -> None:
    t, root = tree
    ours, one = root.parent / "ours", root.parent / "batch-1"
    _zero_shot(root, t.archive, "--hf-cache", str(hf_cache), "--log-samples", "-o", str(ours))
    _zero_shot(root, t.archive, "--hf-cache", str(hf_cache), "--holdout", "off", "--batch-size", "1", "-o", str(one))
    [doc], [single] = _docs(ours), _docs(one)
    assert doc.holdout["passed"] and len(doc.scores) == 7
    assert single.scores == doc.scores
    direct = root.parent / "direct.json"
    command = [sys.executable, "-m", "tests.kit.lm_eval_direct", str(root / t.archive / "fsdp2_epoch_2"), str(root)]
    done = subprocess.run(
        [*command, str(hf_cache), "0", str(direct), "--team", t.name], capture_output=True, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    theirs = json.loads(direct.read_text())
    assert doc.scores == theirs["scores"]
    metric = {k: "acc" if k in ("winogrande", "social_iqa") else "acc_norm" for k in doc.scores}
    [where] = list(ours.glob("*/results.json"))
    for task, per_doc in theirs["loglikelihoods"].items():
        rows = [json.loads(line) for line in (where.parent / f"samples_{task}.jsonl").read_text().splitlines()]
        rows.sort(key=lambda r: r["doc_id"])
        assert [float(r[metric[task]]) for r in rows] == theirs["correct"][task]
        for row, expected in zip(rows, per_doc, strict=True):
            pairs = zip(row["loglikelihoods"], expected, strict=True)
            assert all(abs(a - b) <= RELATIVE * abs(b) for a, b in pairs), (task, row)
