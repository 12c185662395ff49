"""The team's checkpoint scored under lm-eval 0.4.11 (the oldest of the supported range, installed alone in
.venv-lmeval0411 by .ci/lm-eval-0.4.11) and under the shared environment's lm-eval: the same scores and every
answer's log-likelihood bit-identical, each result naming the version it ran."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.fixtures import team_tree
from tests.helpers import RECORDER

pytestmark = [pytest.mark.slow]
pytest.importorskip("lm_eval")
OLD = Path(__file__).resolve().parents[2] / ".venv-lmeval0411"


def _score(team: Path, hf_cache: Path, out: Path, extra_path: Path | None) -> Path:
    path = os.pathsep.join(
        [*([str(extra_path)] if extra_path else []), str(team_tree.REPO), os.environ.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [RECORDER, "zero-shot", str(team / "archive/ckpt_E2"), "--hf-cache", str(hf_cache), "--limit", "6",
         "--model-code", str(team), "--model-factory", "models.moe:build_model", "--workers", "1",
         "--log-samples", "-o", str(out)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path}, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [found] = list(out.glob("*/results.json"))
    return found


def test_lm_eval_0_4_11_and_the_installed_version_give_the_same_scores(tmp_path: Path, hf_cache: Path) -> None:
    if not (OLD / "lm_eval").is_dir():
        pytest.skip(f"lm-eval 0.4.11 is not in {OLD}: run .ci/lm-eval-0.4.11")
    import lm_eval

    team = team_tree.copy(tmp_path / "team")
    old = _score(team, hf_cache, tmp_path / "old", OLD)
    new = _score(team, hf_cache, tmp_path / "new", None)
    a, b = json.loads(old.read_text()), json.loads(new.read_text())
    assert a["harness"]["version"] == "0.4.11"
    assert b["harness"]["version"] == lm_eval.__version__
    assert a["scores"] == b["scores"] and len(a["scores"]) == 7
    for task in a["scores"]:
        rows = [json.loads(line) for line in (old.parent / f"samples_{task}.jsonl").read_text().splitlines()]
        again = [json.loads(line) for line in (new.parent / f"samples_{task}.jsonl").read_text().splitlines()]
        assert rows == again and len(rows) == 6
