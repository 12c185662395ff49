"""`recorder zero-shot` on three teams' trees outside the FSDP2 layouts, each written independently of this
project and of each other, with its own lm-eval adapter:

- tests/fixtures/team_birch: a dense model (no MoE), a TOML config copied beside its checkpoints (the context
  length under `train`, the raw tokenizer.json named by `data.tokenizer_path`), safetensors per epoch with the
  step in `run_info.json` `opt_step`, a forward returning `(logits, loss)`, the validation loss in its own
  `metrics.jsonl`;
- tests/fixtures/team_cedar: an MoE whose capacity limit is a config field (`capacity_factor`, null: none), a
  JSON config, one `torch.save` dict per step (`model_state`, `step`), a forward returning a dict, a tokenizer
  directory naming `</s>` and `<pad>`;
- tests/fixtures/team_dune: a dense rotary model built from keyword arguments (`arch` of a YAML recipe copied
  beside its `checkpoint-<step>/` directories, the context length `arch.window`), a forward returning an
  object whose `.scores` are the logits, a tokenizer directory in each checkpoint, the step and the validation
  loss in `trainer_state.json` and in the run's `metrics.tsv`, and every document (and every request its own
  adapter scores) begun with `<bos>`.

Each is given only the `[tool.recorder]` table of its pyproject.toml (run from its root, as its jobs run),
holdout on; its scores equal `lm_eval.simple_evaluate` run with the team's own adapter
(tests/kit/team_adapter_direct.py) on the same data. Cedar's adapter scores each request alone with its
capacity limit on (its README): compared so, `--moe-capacity --batch-size 1`, the same numerics."""

from __future__ import annotations

import hashlib
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
LIMIT = "8"  # examples per task: a team adapter scores one request per forward pass


@dataclass(frozen=True)
class Tree:
    name: str
    newest: str
    older: str
    steps: tuple[int, int]
    capacity: object  # results.json's sources.capacity.value
    as_adapter: tuple[str, ...] = ()  # how the team's own adapter scores, in options (cedar's: alone, limit on)


TREES = {
    "birch": Tree("birch", "runs/small/epoch_003", "runs/small/epoch_001", (240, 80), "not applicable"),
    "cedar": Tree(
        "cedar",
        "out/tiny_moe/ckpt_step000300.pt",
        "out/tiny_moe/ckpt_step000100.pt",
        (300, 100),
        False,
        ("--moe-capacity", "--batch-size", "1"),
    ),
    "dune": Tree("dune", "runs/base/checkpoint-400", "runs/base/checkpoint-200", (400, 200), "not applicable"),
}


@pytest.fixture(scope="module", params=sorted(TREES))
def tree(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Tree, Path]:
    name = request.param
    root = tmp_path_factory.mktemp(name) / name
    shutil.copytree(FIXTURES / f"team_{name}", root, ignore=shutil.ignore_patterns("__pycache__", "eval_results"))
    return TREES[name], root


def _zero_shot(root: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MODEL_CODE_ROOT", "EVAL_MODEL_FACTORY")}
    done = subprocess.run(
        [RECORDER, "zero-shot", *args, "--workers", "1"], capture_output=True, text=True, cwd=root, env=env,
        timeout=1800,
    )  # fmt: skip
    assert done.returncode == code, done.stdout + done.stderr
    return done


def _docs(base: Path) -> list[ZeroShotResults]:
    return [ZeroShotResults.from_json(p.read_bytes()) for p in sorted(base.glob("*/results.json"))]


def test_two_checkpoints_score_with_only_the_declaration_holdout_on(tree: tuple[Tree, Path], hf_cache: Path) -> None:
    t, root = tree
    out = root.parent / "quick"
    _zero_shot(root, t.newest, t.older, "--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "3", "-o", str(out))
    docs = sorted(_docs(out), key=lambda d: -int(d.checkpoint.step or 0))
    assert tuple(d.checkpoint.step for d in docs) == t.steps
    for doc, path in zip(docs, (t.newest, t.older), strict=True):
        assert doc.label == "/".join(Path(path).parts[-3:])  # the run named in the label
        assert doc.holdout["mode"] == "on" and doc.holdout["passed"], doc.holdout
        assert doc.sources is not None and doc.sources["capacity"]["value"] == t.capacity
        assert "agree" in doc.sources["capacity"]["confirmed"]
        assert doc.sources["max_length"].endswith(("train.context_length", "model.max_seq_len", "arch.window"))
        _assert_tokenizer_recorded_as_on_disk(doc)


def _assert_tokenizer_recorded_as_on_disk(doc: ZeroShotResults) -> None:
    """The tokenizer files a result names hash as the files do: what was scored is recorded."""
    told = doc.checkpoint.tokenizer
    assert told is not None and told["files"], doc.checkpoint
    place = Path(told["path"])
    for name, file in told["files"].items():
        data = (place if place.is_file() else place / name).read_bytes()
        assert (file["size"], file["sha256"]) == (len(data), hashlib.sha256(data).hexdigest()), name


def test_a_tokenizer_without_a_known_eos_is_one_error_line_before_any_weights(tmp_path: Path, hf_cache: Path) -> None:
    root = tmp_path / "birch"
    shutil.copytree(FIXTURES / "team_birch", root, ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('eos_token = "<|endoftext|>"\n', ""))
    done = _zero_shot(root, "runs/small/epoch_003", "--hf-cache", str(hf_cache), "--tasks", "piqa", code=2)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "eos_token" in lines[0], done.stderr
    assert "tokenizer.json" in lines[0] and not (root / "runs/small/epoch_003/eval_results").exists()


def test_a_torch_save_dict_without_its_state_key_is_one_error_line(tmp_path: Path, hf_cache: Path) -> None:
    root = tmp_path / "cedar"
    shutil.copytree(FIXTURES / "team_cedar", root, ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('state_key = "model_state"\n', ""))
    done = _zero_shot(root, "out/tiny_moe/ckpt_step000300.pt", "--hf-cache", str(hf_cache), "--tasks", "piqa", code=2)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
    assert "model_state" in lines[0] and "state_key" in lines[0]


def _refused_before_reading(root: Path, hf_cache: Path, checkpoint: str) -> str:
    """The one `error:` line of a zero-shot refused before its checkpoint's weights were read: their payload is
    cut in half first (the header kept, so the checkpoint is still found), which reading them would report."""
    weights = root / checkpoint / "model.safetensors"
    data = weights.read_bytes()
    header = 8 + int.from_bytes(data[:8], "little")
    weights.write_bytes(data[: header + (len(data) - header) // 2])
    done = _zero_shot(root, checkpoint, "--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "1",
                      "--holdout", "off", code=2)  # fmt: skip
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in done.stderr, done.stderr
    assert not list((root / checkpoint).glob("eval_results/*/results.json"))
    return lines[0]


def test_a_tuple_output_without_a_declared_entry_is_refused_before_the_weights(tmp_path: Path, hf_cache: Path) -> None:
    root = tmp_path / "birch"
    shutil.copytree(FIXTURES / "team_birch", root, ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("logits = 0\n", ""))
    line = _refused_before_reading(root, hf_cache, "runs/small/epoch_001")
    assert "returns a tuple of 2" in line and "logits = 0" in line, line


def test_a_model_that_names_its_positions_nowhere_is_refused_naming_max_length(tmp_path: Path, hf_cache: Path) -> None:
    root = tmp_path / "birch"
    shutil.copytree(FIXTURES / "team_birch", root, ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('max_length = "train.context_length"\n', ""))
    line = _refused_before_reading(root, hf_cache, "runs/small/epoch_001")
    assert "names the positions it takes nowhere" in line and "max_length" in line, line


def test_a_dict_output_the_meta_device_cannot_run_fails_at_its_first_forward_naming_it(
    tmp_path: Path, hf_cache: Path
) -> None:
    """Cedar's routing picks tokens by value (`nonzero`), which a model with no weights cannot run: its output
    is then checked at its first real forward, and the checkpoint fails naming the key to declare."""
    root = tmp_path / "cedar"
    shutil.copytree(FIXTURES / "team_cedar", root, ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text()
    declared = next(x for x in text.splitlines() if x.startswith("logits = "))
    pyproject.write_text(text.replace(declared + "\n", ""))
    done = _zero_shot(root, "out/tiny_moe/ckpt_step000300.pt", "--hf-cache", str(hf_cache), "--tasks", "piqa",
                      "--limit", "1", "--holdout", "off", code=1)  # fmt: skip
    [line] = [x for x in done.stdout.splitlines() if ": failed: " in x]
    assert "returns a dict" in line and "logits = 'logits'" in line and "Traceback" not in done.stderr, line


def test_collect_over_two_runs_shows_each_run_s_epoch(tmp_path: Path, hf_cache: Path) -> None:
    root = tmp_path / "birch"
    shutil.copytree(FIXTURES / "team_birch", root, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root / "runs/small", root / "runs/again")
    _zero_shot(root, "runs/small/epoch_001", "runs/again/epoch_001", "--hf-cache", str(hf_cache), "--tasks", "piqa",
               "--limit", "1", "--holdout", "off")  # fmt: skip
    done = subprocess.run(
        [RECORDER, "collect", "runs/small", "runs/again", "--all"],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("runs/")]
    assert sorted(rows) == ["runs/again/epoch_001", "runs/small/epoch_001"], done.stdout
    assert "older result" not in done.stdout + done.stderr


@pytest.mark.slow
def test_the_scores_equal_lm_eval_run_with_the_team_s_own_adapter(tree: tuple[Tree, Path], hf_cache: Path) -> None:
    t, root = tree
    ours = root.parent / "ours"
    _zero_shot(root, t.newest, "--hf-cache", str(hf_cache), "--log-samples", "--limit", LIMIT, *t.as_adapter,
               "-o", str(ours))  # fmt: skip
    [doc] = _docs(ours)
    assert doc.holdout["passed"] and len(doc.scores) == 7
    direct = root.parent / "direct.json"
    done = subprocess.run(
        [sys.executable, "-m", "tests.kit.team_adapter_direct", str(root), str(root / t.newest), str(hf_cache), LIMIT,
         str(direct), "--team", t.name], capture_output=True, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    theirs = json.loads(direct.read_text())
    assert doc.scores == theirs["scores"]
    [where] = list(ours.glob("*/results.json"))
    for task, per_doc in theirs["loglikelihoods"].items():
        rows = [json.loads(line) for line in (where.parent / f"samples_{task}.jsonl").read_text().splitlines()]
        rows.sort(key=lambda r: r["doc_id"])
        for row, expected in zip(rows, per_doc, strict=True):
            assert all(
                abs(a - b) <= 1e-5 * max(1.0, abs(b)) for a, b in zip(row["loglikelihoods"], expected, strict=True)
            )


def test_a_loss_logged_in_a_json_document_s_list_of_records_is_checked(tmp_path: Path, hf_cache: Path) -> None:
    """Dune's trainer_state.json keeps every logged record in its `history` list (as a Trainer's
    `log_history`): declared as the log, with `log_records`, its held-out loss is the one checked."""
    root = tmp_path / "dune"
    shutil.copytree(FIXTURES / "team_dune", root, ignore=shutil.ignore_patterns("__pycache__", "eval_results"))
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace('log = "metrics.tsv"\n', 'log = "trainer_state.json"\nlog_records = "history"\n')
    )
    out = root.parent / "out"
    _zero_shot(root, "runs/base/checkpoint-200", "--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "1",
               "-o", str(out))  # fmt: skip
    [doc] = _docs(out)
    assert doc.holdout["passed"] and doc.holdout["logged"] == 0.866629, doc.holdout
    pyproject.write_text(pyproject.read_text().replace('log_records = "history"', 'log_records = "records"'))
    done = _zero_shot(root, "runs/base/checkpoint-200", "--hf-cache", str(hf_cache), "--tasks", "piqa", code=2)
    assert "no list of records at records" in done.stderr and done.stderr.count("error:") == 1, done.stderr


def test_bos_declared_as_anything_but_a_flag_is_refused(tmp_path: Path, hf_cache: Path) -> None:
    root = tmp_path / "dune"
    shutil.copytree(FIXTURES / "team_dune", root, ignore=shutil.ignore_patterns("__pycache__", "eval_results"))
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace('logits = "scores"\nbos = true\n', 'logits = "scores"\nbos = 1\n')
    )
    done = _zero_shot(root, "runs/base/checkpoint-200", "--hf-cache", str(hf_cache), "--tasks", "piqa", code=2)
    assert "bos must be true or false" in done.stderr and done.stderr.count("error:") == 1, done.stderr


def test_a_factory_called_as_it_does_not_take_it_is_refused_before_the_weights(tmp_path: Path, hf_cache: Path) -> None:
    """Dune's `build_model(**arch)` called positionally (its declared `call` left out): the signature says it
    before the factory runs, in one line, exit 2."""
    root = tmp_path / "dune"
    shutil.copytree(FIXTURES / "team_dune", root, ignore=shutil.ignore_patterns("__pycache__", "eval_results"))
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('call = "keywords"\n', ""))
    done = _zero_shot(root, "runs/base/checkpoint-200", "--hf-cache", str(hf_cache), "--tasks", "piqa", code=2)
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "does not take factory(config)" in lines[0], done.stderr
    assert "[tool.recorder] call" in lines[0] and not list(root.glob("runs/base/*/eval_results"))
