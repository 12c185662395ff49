"""Two checkpoints on two Ray actors print one table equal to the one-worker scores at another batch size
(and `recorder collect` prints it again); a model built by the team's own factory, with its capacity switch off while scoring,
scores like the transformers model of the same weights and records its code's provenance."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evaluator.zero_shot.loading import ModelCode
from evaluator.zero_shot.options import ZeroShotOptions
from evaluator.zero_shot.reporting.outputs import table
from evaluator.zero_shot.runner import zero_shot
from recorder.results.zero_shot import ZeroShotResults
from tests.helpers import run_cli

pytestmark = [pytest.mark.slow]
pytest.importorskip("lm_eval")

TEAM_MODEL = '''"""The team's model: a Llama whose routing has a capacity limit (token dropping) unless switched off."""

from transformers import LlamaConfig, LlamaForCausalLM


class RoutedLM(LlamaForCausalLM):
    def __init__(self, config, capacity):
        super().__init__(config)
        self.capacity = capacity

    def forward(self, *args, **kwargs):
        if self.capacity:
            raise RuntimeError("capacity on: dropped tokens would make a score depend on its batch")
        return super().forward(*args, **kwargs)


def build(config, *, capacity=True):
    fields = {k: v for k, v in config.items() if k != "model_type"}
    return RoutedLM(LlamaConfig(**fields), capacity)
'''


def _options(hf_cache: Path, **kw: object) -> ZeroShotOptions:
    return ZeroShotOptions(tasks=("arc_easy", "piqa"), limit=3, hf_cache=hf_cache, **kw)  # type: ignore[arg-type]


def test_two_checkpoints_on_two_ray_workers_equal_one_worker_and_any_batch_size(
    training: Path, hf_cache: Path, ray_cluster: None
) -> None:
    paths = [training / "run/snapshots/step_10", training / "run/snapshots/step_20"]
    out: list[str] = []
    two = zero_shot(paths, _options(hf_cache, workers=2), echo=out.append)
    one = zero_shot(paths, _options(hf_cache, workers=1, batch_size=1), echo=lambda _: None)
    assert [d.settings.workers for d in two.docs] == ["ray:2", "ray:2"]
    assert [d.settings.workers for d in one.docs] == ["local", "local"]
    assert [d.scores for d in two.docs] == [d.scores for d in one.docs]
    assert two.table == one.table and out[-1] == two.table.rstrip("\n") and out.count(out[-1]) == 1
    done = run_cli("collect", *map(str, paths))
    assert done.returncode == 0, done.stderr
    # both results of each snapshot verify, so both are shown, in their directories' order
    assert done.stdout == table([two.docs[0], one.docs[0], two.docs[1], one.docs[1]])


def test_the_teams_model_code_evaluates_with_capacity_off_and_its_provenance(training: Path, hf_cache: Path) -> None:
    import hashlib

    tree = training / "teamcode"
    (tree / "tiny_moe").mkdir(parents=True)
    (tree / "tiny_moe/__init__.py").write_text("")
    (tree / "tiny_moe/model.py").write_text(TEAM_MODEL)
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "model"]):
        subprocess.run([*git, *args], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    run = training / "run"
    code = ModelCode(root=tree, factory="tiny_moe.model:build")
    custom = zero_shot([run], _options(hf_cache, code=code, out=training / "custom"), echo=lambda _: None)
    plain = zero_shot([run], _options(hf_cache, out=training / "plain"), echo=lambda _: None)
    [doc], [ref] = custom.docs, plain.docs
    assert isinstance(doc, ZeroShotResults) and doc.code is not None
    assert doc.scores == ref.scores and doc.holdout["passed"]
    assert doc.settings.capacity is False
    files = {f["path"]: f["sha256"] for f in doc.code["files"]}
    model_py = hashlib.sha256((tree / "tiny_moe/model.py").read_bytes()).hexdigest()
    assert files == {"tiny_moe/__init__.py": hashlib.sha256(b"").hexdigest(), "tiny_moe/model.py": model_py}
    assert doc.code["git_commit"] == commit and doc.code["git_dirty"] is False
    assert doc.code["factory"] == "tiny_moe.model:build"
    [written] = custom.written
    assert written.parent.parent == training / "custom" and written.parent.name.startswith("run_")
