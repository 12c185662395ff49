"""The team's model code, results and settings: a module the model uses from outside --model-code aborts
naming it, the provenance names the tree's files and commit; two archives of the same epoch keep both results
under -o DIR with two Ray workers (and a checkpoint given twice keeps both of its results), `recorder
collect` prints all three; the seed's environment variables drive the same run as the options, run from the
team's repository its code and its eval/hf_cache are the defaults, and --log-samples writes
samples_<task>.jsonl."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from evaluator.zero_shot.loading import ModelCode
from evaluator.zero_shot.options import ZeroShotOptions
from evaluator.zero_shot.runner import zero_shot
from recorder.results.zero_shot import ZeroShotResults
from tests.fixtures import team_tree
from tests.helpers import RECORDER, run_cli

pytest.importorskip("lm_eval")
pytest.importorskip("torch")

RUN = Path("checkpoints/tiny/run1")
FACTORY = "models.moe:build_model"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [RECORDER, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600
    )


def test_a_module_from_outside_the_tree_aborts_naming_it(tmp_path: Path, hf_cache: Path) -> None:
    team = team_tree.copy(tmp_path / "team")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "fastops.py").write_text("import torch\n\n\ndef silu(x):\n    return torch.nn.functional.silu(x)\n")
    moe = team / "models/moe.py"
    moe.write_text(moe.read_text().replace("from torch import nn\n", "from torch import nn\n\nimport fastops\n"))
    args = ["zero-shot", str(team / RUN), "--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "1"]
    args += ["--model-code", str(team), "--model-factory", FACTORY, "--workers", "1"]
    pythonpath = os.pathsep.join([str(elsewhere), os.environ.get("PYTHONPATH", "")])
    done = _cli(*args, env={"PYTHONPATH": pythonpath})
    # refused before any checkpoint is scored: the factory is built (and its imports seen) first
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith("error: module fastops is imported from ")
    assert str(elsewhere / "fastops.py") in line and f"outside --model-code {team}" in line
    assert not (team / RUN / "eval_results").exists()


def test_the_plain_module_factory_and_the_provenance_of_its_tree(tmp_path: Path, hf_cache: Path) -> None:
    team = team_tree.copy(tmp_path / "team")
    git = ["git", "-C", str(team), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "models", "utils", "pretrain.py", "configs"], ["commit", "-qm", "tree"]):
        subprocess.run([*git, *args], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    done = run_cli(
        "zero-shot", str(team / "archive/ckpt_E1"), "--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "2",
        "--model-code", str(team), "--model-factory", FACTORY, "--workers", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = list((team / "archive/ckpt_E1/eval_results").glob("official_lmeval7_*/results.json"))
    doc = ZeroShotResults.from_json(path.read_bytes())
    assert doc.code is not None and doc.code["git_commit"] == commit and doc.code["git_dirty"] is False
    files = {f["path"]: f["sha256"] for f in doc.code["files"]}
    assert files == {
        p: hashlib.sha256((team / p).read_bytes()).hexdigest() for p in ("models/__init__.py", "models/moe.py")
    }


@pytest.mark.slow
def test_two_archives_of_one_epoch_keep_both_results_and_collect_prints_both(
    tmp_path: Path, hf_cache: Path, ray_cluster: None
) -> None:
    team = team_tree.copy(tmp_path / "team")
    shutil.copytree(team / RUN, team / "checkpoints/tiny/run2")  # a second run of the same recipe
    second = team / "archive/ckpt_R2"
    shutil.copytree(team / "archive/ckpt_E2/fsdp2_epoch_2", second / "fsdp2_epoch_2")
    meta = json.loads((team / "archive/ckpt_E2/final_meta.json").read_text())
    (second / "final_meta.json").write_text(json.dumps(meta | {"source": "../../checkpoints/tiny/run2"}))
    out = tmp_path / "results"
    archives = [team / "archive/ckpt_E2", second, team / "archive/ckpt_E2"]  # the first one twice
    options = ZeroShotOptions(
        tasks=("piqa",), limit=2, hf_cache=hf_cache, workers=2, out=out, code=ModelCode(root=team, factory=FACTORY)
    )
    said: list[str] = []
    summary = zero_shot(archives, options, echo=said.append)
    assert not summary.failed, said
    labels = sorted(ZeroShotResults.from_json(p.read_bytes()).label for p in out.glob("*/results.json"))
    assert labels == ["tiny/run1/epoch_2@ckpt_E2", "tiny/run1/epoch_2@ckpt_E2", "tiny/run2/epoch_2@ckpt_R2"]
    assert len({p.parent for p in out.glob("*/results.json")}) == 3
    done = run_cli("collect", str(out), "--all")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines()[1:] if line.startswith("tiny/")]
    assert [line.split()[0] for line in lines] == labels  # every result that verifies, each a smoke test
    # (--limit 2), marked as one, and unsigned: no --trust key checked who wrote it
    assert all(line.endswith("smoke test, test data, unsigned") for line in lines), done.stdout
    assert done.stdout.splitlines()[1 + len(lines)].startswith("unsigned: "), done.stdout
    default = run_cli("collect", str(out))
    assert default.returncode == 1 and "left out 3 smoke test(s) (--limit): --all shows them" in default.stdout


def test_from_the_teams_repository_its_code_and_its_datasets_are_the_defaults(tmp_path: Path, hf_cache: Path) -> None:
    team = team_tree.copy(tmp_path / "team")
    shutil.copytree(hf_cache, team / "eval/hf_cache")
    done = subprocess.run(
        [RECORDER, "zero-shot", "archive/ckpt_E1", "--model-factory", FACTORY, "--tasks", "piqa", "--limit", "2",
         "--workers", "1"],
        capture_output=True, text=True, cwd=team, env={**os.environ, "EVAL_OFFLINE": "1"}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = list((team / "archive/ckpt_E1/eval_results").glob("official_lmeval7_*/results.json"))
    doc = json.loads(path.read_text())
    assert doc["code"]["root"] == str(team) and doc["code"]["factory"] == FACTORY
    [data] = doc["tasks"]["piqa"]["data"]
    assert Path(data).is_relative_to(team / "eval/hf_cache")
    assert doc["settings"].get("processes") is None  # on the CPU, one process unless --nproc says more


@pytest.mark.slow
def test_the_seeds_environment_variables_drive_the_same_run_as_the_options(tmp_path: Path, hf_cache: Path) -> None:
    team = team_tree.copy(tmp_path / "team")
    run, by_env, by_options = team / RUN, tmp_path / "by_env", tmp_path / "by_options"
    env = {
        "CKPT_PATH": str(run), "CKPT_EPOCH": "1", "CKPT_CONFIG_DIR": str(run), "MODEL_CODE_ROOT": str(team),
        "EVAL_MODEL_FACTORY": FACTORY, "EVAL_OUTPUT_DIR": str(by_env), "EVAL_BATCH_SIZE_MCQ": "3",
        "EVAL_PARAM_DTYPE": "fp32", "MOE_SKIP_CAPACITY": "1", "EVAL_HOLDOUT_CHECK": "1", "EVAL_HOLDOUT_MAX_GAP": "0.004",
        "LMEVAL_TASKS": "piqa,siqa", "LMEVAL_LIMIT": "3", "LMEVAL_LOG_SAMPLES": "1",
        "EVAL_TOKENIZER_PATH": str(team / "data/tokenizer.json"), "EVAL_HF_ROOT": str(hf_cache), "EVAL_OFFLINE": "1",
    }  # fmt: skip
    done = _cli("zero-shot", "--workers", "1", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_cli(
        "zero-shot", str(run), "--epoch", "1", "--config-dir", str(run), "--model-code", str(team),
        "--model-factory", FACTORY, "-o", str(by_options), "--batch-size", "3", "--dtype", "fp32",
        "--moe-skip-capacity", "--holdout", "on", "--holdout-max-gap", "0.004", "--tasks", "piqa,siqa",
        "--limit", "3", "--log-samples", "--tokenizer", str(team / "data/tokenizer.json"), "--hf-cache",
        str(hf_cache), "--workers", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [a], [b] = list(by_env.glob("*/results.json")), list(by_options.glob("*/results.json"))
    env_doc, option_doc = ZeroShotResults.from_json(a.read_bytes()), ZeroShotResults.from_json(b.read_bytes())
    assert env_doc.label == option_doc.label == "tiny/run1/epoch_1"
    assert env_doc.scores == option_doc.scores and env_doc.settings == option_doc.settings
    assert env_doc.settings.batch_size == 3 and env_doc.settings.limit == 3
    assert env_doc.holdout == option_doc.holdout and env_doc.holdout["max_gap"] == 0.004
    for task in ("piqa", "social_iqa"):
        rows = (a.parent / f"samples_{task}.jsonl").read_text().splitlines()
        assert len(rows) == 3 and rows == (b.parent / f"samples_{task}.jsonl").read_text().splitlines()
    off = _cli("zero-shot", "--workers", "1", env=env | {"EVAL_HOLDOUT_CHECK": "0", "LMEVAL_LOG_SAMPLES": "0"})
    assert off.returncode == 0, off.stdout + off.stderr
    newest = max(by_env.glob("*/results.json"), key=lambda p: json.loads(p.read_text())["finished"])
    assert json.loads(newest.read_text())["holdout"] == {"mode": "off"}
    assert not list(newest.parent.glob("samples_*.jsonl"))


@pytest.mark.slow
def test_one_checkpoint_split_across_two_processes_scores_the_same(tmp_path: Path, hf_cache: Path) -> None:
    team = team_tree.copy(tmp_path / "team")
    args = ["zero-shot", str(team / RUN / "snapshots/step_0000010"), "--hf-cache", str(hf_cache), "--limit", "5"]
    args += ["--model-code", str(team), "--model-factory", FACTORY, "--workers", "1", "--log-samples"]
    one = run_cli(*args, "-o", str(tmp_path / "one"))
    two = _cli(*args, "-o", str(tmp_path / "two"), env={"NPROC_PER_NODE": "2"})
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stdout + two.stderr
    [a], [b] = list((tmp_path / "one").glob("*/results.json")), list((tmp_path / "two").glob("*/results.json"))
    first, second = ZeroShotResults.from_json(a.read_bytes()), ZeroShotResults.from_json(b.read_bytes())
    assert first.settings.processes is None and second.settings.processes == 2
    assert first.scores == second.scores and len(first.scores) == 7
    for task in first.scores:
        assert (a.parent / f"samples_{task}.jsonl").read_text() == (b.parent / f"samples_{task}.jsonl").read_text()
