"""`recorder zero-shot` on the team's checkpoint against lm-eval run directly on the same weights and data
(tests/kit/lm_eval_direct.py: lm-eval's own HFLM and its own task definitions, the weights read by
torch's DCP alone), under the installed lm-eval and under 0.4.11 (.venv-lmeval0411, made by
.ci/lm-eval-0.4.11): every task's score and every document's outcome equal, every answer's log-likelihood
equal to fp32 rounding.

Bits are not compared: HFLM sorts requests by length before batching them, the evaluator keeps request order
(so that --nproc splits whole batches), and on the CPU a row's fp32 logits round differently with the
padded width of the batch it shares. Neither lm-eval nor the seed promises more than that the scores do not
depend on the batching; the log-likelihoods here differ by about 1e-7 of their value, far below what a
different prompt, tokenisation or truncation would change (whole units)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures import team_tree
from tests.helpers import RECORDER

pytestmark = [pytest.mark.slow]
pytest.importorskip("lm_eval")
pytest.importorskip("torch")
OLD = Path(__file__).resolve().parents[2] / ".venv-lmeval0411"
ARCHIVE = Path("archive/ckpt_E2")
RELATIVE = 1e-6  # fp32 logits agree to a few ulps (1.2e-7 each); a changed token moves a value by units


def _env(extra: Path | None) -> dict[str, str]:
    path = [*([str(extra)] if extra else []), str(team_tree.REPO), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def _recorder(team: Path, hf_cache: Path, out: Path, extra: Path | None) -> Path:
    done = subprocess.run(
        [RECORDER, "zero-shot", str(team / ARCHIVE), "--hf-cache", str(hf_cache), "--model-code", str(team),
         "--model-factory", "models.moe:build_model", "--workers", "1", "--log-samples", "-o", str(out)],
        capture_output=True, text=True, env=_env(extra), timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [found] = list(out.glob("*/results.json"))
    return found


def _direct(team: Path, hf_cache: Path, out: Path, extra: Path | None) -> dict[str, object]:
    ckpt = team / ARCHIVE / "fsdp2_epoch_2"
    command = [sys.executable, "-m", "tests.kit.lm_eval_direct", str(ckpt), str(team), str(hf_cache), "0"]
    done = subprocess.run(
        [*command, str(out)], capture_output=True, text=True, env=_env(extra), cwd=team_tree.REPO, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found: dict[str, object] = json.loads(out.read_text())
    return found


@pytest.mark.parametrize("version", ["installed", "0.4.11"])
def test_scores_equal_lm_eval_run_directly(version: str, tmp_path: Path, hf_cache: Path) -> None:
    extra = None
    if version == "0.4.11":
        if not (OLD / "lm_eval").is_dir():
            pytest.skip(f"lm-eval 0.4.11 is not in {OLD}: run .ci/lm-eval-0.4.11")
        extra = OLD
    team = team_tree.copy(tmp_path / "team")
    ours_file = _recorder(team, hf_cache, tmp_path / "ours", extra)
    ours = json.loads(ours_file.read_text())
    theirs = _direct(team, hf_cache, tmp_path / "direct.json", extra)
    assert ours["harness"]["version"] == theirs["version"]
    if version == "0.4.11":
        assert theirs["version"] == "0.4.11"
    assert ours["scores"] == theirs["scores"] and len(ours["scores"]) == 7
    metric = {t: "acc" if t in ("winogrande", "social_iqa") else "acc_norm" for t in ours["scores"]}
    for task, per_doc in theirs["loglikelihoods"].items():  # type: ignore[attr-defined]
        lines = (ours_file.parent / f"samples_{task}.jsonl").read_text().splitlines()
        rows = sorted((json.loads(line) for line in lines), key=lambda r: r["doc_id"])
        assert len(rows) == len(per_doc) == 24
        assert [float(r[metric[task]]) for r in rows] == theirs["correct"][task]  # type: ignore[index]
        for row, expected in zip(rows, per_doc, strict=True):
            got = row["loglikelihoods"]
            assert len(got) == len(expected)
            assert all(abs(a - b) <= RELATIVE * abs(b) for a, b in zip(got, expected, strict=True)), (task, row)
