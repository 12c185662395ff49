"""A team whose conventions differ from the defaults: its factory takes no `capacity` argument (a config field
or an attribute switches it), its holdout settings and tokenizer live under other keys. Given only the
`[tool.recorder]` table of its pyproject.toml, zero-shot scores it and records where each value came from;
without it, one `error:` line names how to say what is missing. The team's trained checkpoints are the
fixture's (tests/fixtures/team); its config files are rewritten under the team's own keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluator.zero_shot.loading import ModelCode
from evaluator.zero_shot.options import ZeroShotOptions
from evaluator.zero_shot.runner import ZeroShotSummary, zero_shot
from recorder.results.zero_shot import ZeroShotResults
from tests.fixtures import team_tree
from tests.helpers import RECORDER

pytest.importorskip("lm_eval")
pytest.importorskip("torch")

RUN = Path("checkpoints/tiny/run1")
FACTORIES = '''"""Builders whose MoE capacity is switched otherwise than by an argument."""

from models.moe import TinyMoE


def build_by_config(cfg):
    return TinyMoE(cfg, capacity=bool(cfg["moe_capacity"]))


def build_plain(cfg):
    return TinyMoE(cfg)
'''
DECLARED = """[project]
name = "team"

[tool.recorder]
factory = "models.variant:build_by_config"
tokenizer = "tokenizer_path"

[tool.recorder.capacity]
config = "moe_capacity"

[tool.recorder.holdout]
seq_len = "data.seq_len"
tokens = "train.eval_tokens"
batch_rows = "train.eval_batch_size"
"""


def _own_keys(team: Path) -> Path:
    """The team tree with its settings under its own keys and a factory that takes the config alone."""
    import yaml

    config_file = team / RUN / "all_config.yaml"
    config = yaml.safe_load(config_file.read_text())
    config["data"]["seq_len"] = config.pop("packing")["seq_len"]
    evaluation = config.pop("eval")
    config["train"] |= {"eval_tokens": evaluation["tokens"], "eval_batch_size": evaluation["batch_rows"]}
    config["model"]["moe_capacity"] = True
    config_file.write_text(yaml.safe_dump(config))
    metadata_file = team / RUN / "train_metadata.yaml"
    metadata = yaml.safe_load(metadata_file.read_text())
    metadata["tokenizer_path"] = metadata.pop("tokenizer")
    metadata_file.write_text(yaml.safe_dump(metadata))
    (team / "models/variant.py").write_text(FACTORIES)
    return team


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _own_keys(team_tree.copy(tmp_path_factory.mktemp("own-keys") / "team"))


@pytest.fixture(autouse=True)
def _unload_the_team_code() -> Iterator[None]:
    yield
    for name in [n for n in sys.modules if n.split(".", 1)[0] in ("models", "utils")]:
        del sys.modules[name]


def _declare(team: Path, text: str) -> None:
    (team / "pyproject.toml").write_text(text)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RECORDER, "zero-shot", *args], capture_output=True, text=True, cwd=cwd, timeout=600,
        env={k: v for k, v in os.environ.items() if k not in ("MODEL_CODE_ROOT", "EVAL_MODEL_FACTORY")},
    )  # fmt: skip


def _refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    return " ".join(done.stderr.split())


def _run(team: Path, hf_cache: Path, paths: list[Path], **kw: object) -> tuple[ZeroShotSummary, str]:
    lines: list[str] = []
    settings: dict[str, object] = {"tasks": ("piqa",), "limit": 3, "workers": 1, "code": ModelCode(root=team)}
    options = ZeroShotOptions(hf_cache=hf_cache, **(settings | kw))  # type: ignore[arg-type]
    return zero_shot(paths, options, echo=lines.append), "\n".join(lines)


def test_an_moe_factory_with_no_capacity_switch_fails_naming_the_ways(team: Path, hf_cache: Path) -> None:
    # with no switch the model is built as its config says, and the probe finds its rows depend on their batch
    _declare(team, DECLARED.replace('[tool.recorder.capacity]\nconfig = "moe_capacity"\n', ""))
    done = _cli(str(team / "archive/ckpt_E2"), "--hf-cache", str(hf_cache), "--tasks", "piqa", "--holdout", "off",
                cwd=team)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = [x for x in done.stdout.splitlines() if ": failed: " in x]
    assert "models.variant:build_by_config: with no capacity switch declared" in line
    assert "[tool.recorder.capacity]" in line and "--moe-capacity" in line and "Traceback" not in done.stderr
    assert not (team / "archive/ckpt_E2/eval_results").exists()


def test_settings_under_undeclared_keys_are_refused_naming_the_declaration(team: Path, hf_cache: Path) -> None:
    _declare(team, DECLARED.split("[tool.recorder.holdout]")[0])
    message = _refused(_cli(str(team / RUN), "--hf-cache", str(hf_cache), "--tasks", "piqa", cwd=team))
    assert "no holdout seq_len at packing.seq_len" in message and "[tool.recorder.holdout] seq_len" in message


def test_the_declaration_alone_scores_the_run_a_snapshot_and_the_archive(team: Path, hf_cache: Path) -> None:
    _declare(team, DECLARED)
    paths = [team / RUN, team / RUN / "snapshots/step_0000020", team / "archive/ckpt_E2"]
    summary, _ = _run(team, hf_cache, paths)
    assert not summary.failed and len(summary.docs) == 3
    for doc in summary.docs:
        assert isinstance(doc, ZeroShotResults) and doc.holdout["passed"] and doc.settings.capacity is False
        assert doc.sources is not None
        assert doc.sources["tokenizer"] == "train_metadata.yaml tokenizer_path"
        assert doc.sources["holdout"]["seq_len"] == "all_config.yaml data.seq_len"
        assert doc.sources["holdout"]["batch_rows"] == "all_config.yaml train.eval_batch_size"
        assert doc.sources["capacity"]["switch"].startswith("config moe_capacity")
        assert "agree" in doc.sources["capacity"]["confirmed"]
    assert summary.docs[0].scores == summary.docs[1].scores == summary.docs[2].scores
    assert [d.checkpoint.step for d in summary.docs] == [20, 20, 20]


def test_scores_do_not_depend_on_the_batch_size_with_the_declared_switch(team: Path, hf_cache: Path) -> None:
    _declare(team, DECLARED)
    archive = [team / "archive/ckpt_E2"]
    one, _ = _run(team, hf_cache, archive, batch_size=1, tasks=("winogrande", "piqa"), limit=8, holdout="off")
    many, _ = _run(team, hf_cache, archive, batch_size=32, tasks=("winogrande", "piqa"), limit=8, holdout="off")
    assert one.docs[0].scores == many.docs[0].scores


def test_an_attribute_switch_is_set_and_read_back(team: Path, hf_cache: Path) -> None:
    declared = DECLARED.replace("build_by_config", "build_plain").replace(
        'config = "moe_capacity"', 'attribute = "capacity"'
    )
    _declare(team, declared)
    summary, _ = _run(team, hf_cache, [team / "archive/ckpt_E2"])
    [doc] = summary.docs
    assert doc.holdout["passed"] and doc.settings.capacity is False
    assert doc.sources is not None and doc.sources["capacity"]["switch"].startswith("attribute capacity")


def test_a_declared_switch_the_model_ignores_is_never_recorded_as_off(team: Path, hf_cache: Path) -> None:
    """build_plain keeps capacity on whatever the config says: the built model shows it, nothing is written."""
    _declare(team, DECLARED.replace("build_by_config", "build_plain"))
    summary, out = _run(team, hf_cache, [team / "archive/ckpt_E2"], holdout="off")
    assert summary.failed == ["tiny/run1/epoch_2@ckpt_E2"] and summary.docs == []  # the archive's label
    assert "capacity is on" in out and "[tool.recorder.capacity]" in out


def test_an_unwritable_result_place_is_refused_before_any_work(team: Path, hf_cache: Path, tmp_path: Path) -> None:
    _declare(team, DECLARED)
    archive = team / "archive/ckpt_E1"
    (archive / "eval_results").write_text("not a directory")
    try:
        message = _refused(_cli(str(archive), "--hf-cache", str(hf_cache), "--tasks", "piqa", cwd=team))
        assert f"{archive / 'eval_results'}" in message and "-o DIR" in message
        summary, _ = _run(team, hf_cache, [archive], out=tmp_path / "out")
        assert len(summary.written) == 1 and tmp_path / "out" in summary.written[0].parents
    finally:
        (archive / "eval_results").unlink()


def test_the_training_commit_is_compared_with_the_code_s(team: Path, hf_cache: Path) -> None:
    import yaml

    _declare(team, DECLARED)
    metadata_file = team / RUN / "train_metadata.yaml"
    original = metadata_file.read_text()
    metadata_file.write_text(yaml.safe_dump(yaml.safe_load(original) | {"git_commit": "0123456789abcdef"}))
    try:
        summary, out = _run(team, hf_cache, [team / "archive/ckpt_E2"], holdout="off")
    finally:
        metadata_file.write_text(original)
    [doc] = summary.docs
    assert doc.training_commit == {"training": "0123456789abcdef", "code": None, "same": False}
    assert "is not the training's git_commit 0123456789abcdef" in out


def test_an_epoch_s_step_from_its_meta_file_or_the_saved_step(tmp_path: Path) -> None:
    import torch
    import torch.distributed.checkpoint as dcp

    from evaluator.zero_shot.origin.team_run import find

    run = tmp_path / "proj/run"
    run.mkdir(parents=True)
    (run / "all_config.yaml").write_text("model: {dim: 2}\n")
    epoch = run / "fsdp2_epoch_3"
    dcp.save({"model": {"w": torch.zeros(2)}, "extra": {"step": 30}}, checkpoint_id=str(epoch), no_dist=True)
    found = find(run)
    assert found is not None and (found.step, found.step_from) == (30, "the checkpoint's saved extra.step")
    (epoch / "epoch_meta.json").write_text(json.dumps({"step": 31}))
    found = find(run)
    assert found is not None and (found.step, found.step_from) == (31, "epoch_meta.json step")
