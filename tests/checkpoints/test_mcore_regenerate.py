"""The golden series written again by the real megatron-core (`.venv-mcore`, made by `.ci/mcore`) and
compared with the committed ones: the same tensors under the same names, the same NeMo-RL files, the same
configs, and megatron-core's forward giving the same logits (to float summation order: the thread count
may differ; in bf16, within megatron-core's own bf16 noise). `.metadata` is compared through what it
describes, not byte for byte: torch records the save's directory and a random save id in it. The series a
pipeline-parallel one loads (tests/fixtures/make_mcore.py's TWIN) is written first."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from recorder.checkpoints.readers import detect, load_state_dict
from tests.kit import mcore_golden
from tests.kit.mcore_golden import GOLDEN, ITERATION, SERIES, STEPS

ROOT = Path(__file__).resolve().parents[2]
MCORE_PYTHON = ROOT / ".venv-mcore" / "bin" / "python"
pytestmark = [pytest.mark.slow, pytest.mark.mcore]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert MCORE_PYTHON.is_file(), f"{MCORE_PYTHON}: missing: run .ci/mcore to make the megatron-core environment"
    out = tmp_path_factory.mktemp("mcore") / "golden"
    done = subprocess.run(
        [str(MCORE_PYTHON), str(ROOT / "tests" / "fixtures" / "make_mcore.py"), "all", str(out)],
        capture_output=True, text=True, timeout=1800, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def _tensors(step_dir: Path) -> dict[str, torch.Tensor]:
    """The raw Megatron tensors under Megatron's names, as our loader reads a torch DCP directory."""
    info = replace(detect(step_dir), format="torch-dcp", weights_dir=step_dir / ITERATION)
    state, _ = load_state_dict(info, dtype="fp32")
    return state


@pytest.mark.parametrize("kind", SERIES)
def test_megatron_core_writes_the_committed_series_again(kind: str, regenerated: Path) -> None:
    for step in STEPS:
        ours, theirs = GOLDEN / kind / f"step_{step}", regenerated / kind / f"step_{step}"
        for name in ("config.yaml", "training_info.json"):
            assert (ours / name).read_text() == (theirs / name).read_text(), name
        listed = sorted(p.name for p in (theirs / ITERATION).iterdir())
        assert listed == sorted(p.name for p in (ours / ITERATION).iterdir())
        for name in listed:
            if name != ".metadata":  # shards, common.pt and metadata.json are written byte for byte alike
                assert (ours / ITERATION / name).read_bytes() == (theirs / ITERATION / name).read_bytes(), name
        a, b = _tensors(ours), _tensors(theirs)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a)
    config = "config.json"
    assert (mcore_golden.model_config(kind) / config).read_text() == (
        regenerated / f"{kind}.hf-config" / config
    ).read_text()
    old, new = (
        load_file(str(mcore_golden.logits_file(kind))),
        load_file(str(regenerated / f"{kind}.logits.safetensors")),
    )
    assert old.keys() == new.keys()
    # fp32 logits agree to summation order; bf16 ones (a series trained in bf16) within the series' own bf16
    # noise, megatron-core's bf16 forward against its fp32 one: another CPU's bf16 kernels round otherwise
    noise = max((old[f"step_{s}"] - old[f"step_{s}.fp32"]).abs().max().item() for s in STEPS)
    for name in old:
        bound = 1e-4 if name.endswith(".fp32") else max(1e-4, noise)
        assert (old[name] - new[name]).abs().max().item() <= bound, (name, bound)


def test_the_regenerated_tokenizer_is_the_committed_one(regenerated: Path) -> None:
    names = sorted(f.name for f in (GOLDEN / "tokenizer").iterdir())
    assert names == sorted(f.name for f in (regenerated / "tokenizer").iterdir())
    for name in names:
        ours, theirs = (GOLDEN / "tokenizer" / name).read_text(), (regenerated / "tokenizer" / name).read_text()
        assert (json.loads(ours) == json.loads(theirs)) if name.endswith(".json") else ours == theirs, name


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-m", "mcore"]))
