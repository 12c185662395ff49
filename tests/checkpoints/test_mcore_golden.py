"""The golden series megatron-core wrote (tests/golden/mcore/) read by our loader: every file as committed,
the real `.metadata` admitted by the allow list, and the loaded models' logits equal to megatron-core's own
forward on the same inputs (dense at TP1 and TP2, MoE with a shared expert, Qwen3.5's hybrid layers).

fp32: our model on the weights as saved against megatron-core's forward computed in fp32 on the same
weights: within 1e-4, the same top token everywhere; this is what proves each mapping. bf16 (the dense
model trained in bf16): both sides compute in bf16 with their own kernels and differ by bf16 noise: the
bound is twice what megatron-core's own bf16 forward differs from its fp32 one, and the top token must agree
wherever the fp32 reference's margin exceeds that bound. Not for the MoE and the hybrid: transformers' bf16
router scores in bf16 where megatron-core's scores in fp32 (moe_router_dtype), so a near tie routes a token
differently (step 19 of the MoE series), and the hybrid's recurrent layers make megatron-core's own bf16
noise (about 1.0 here) larger than any top-token margin."""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from recorder.checkpoints.detect import ModelSource
from recorder.checkpoints.evaluable import load_checkpoint
from recorder.checkpoints.torch_dcp.safe_metadata import SAVE_PLAN_CLASSES, allowed_globals, load_metadata
from tests.kit import mcore_golden
from tests.kit.mcore_golden import GOLDEN, ITERATION, SERIES, STEPS
from trainer.policy.errors import CheckpointError

FP32_TOLERANCE = 1e-4


def test_every_golden_file_is_as_committed() -> None:
    listed = {}
    for row in (GOLDEN / "SHA256SUMS").read_text().splitlines():
        digest, name = row.split("  ", 1)
        listed[name] = digest
    present = {p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*") if p.is_file() and p.name != "SHA256SUMS"}
    assert present == set(listed)
    for name, digest in listed.items():
        assert hashlib.sha256((GOLDEN / name).read_bytes()).hexdigest() == digest, name


def test_the_golden_series_are_laid_out_as_nemo_rl_leaves_them() -> None:
    for kind in SERIES:
        for step in STEPS:
            step_dir = GOLDEN / kind / f"step_{step}"
            assert json.loads((step_dir / "training_info.json").read_text())["training_step_end_time_ms"] > 0
            assert (step_dir / "config.yaml").is_file() and (step_dir / ITERATION / ".metadata").is_file()
            assert not list(step_dir.rglob("config.json")) and not list(step_dir.rglob("tokenizer*"))


class _Recording(pickle.Unpickler):
    """Resolves every global and remembers its name: how the test learns what a real `.metadata` names."""

    def __init__(self, data: bytes) -> None:
        import io

        super().__init__(io.BytesIO(data))
        self.names: set[tuple[str, str]] = set()

    def find_class(self, module: str, name: str) -> object:
        self.names.add((module, name))
        return super().find_class(module, name)


def test_the_allow_list_admits_what_megatron_core_writes_and_its_save_plans_by_exact_name() -> None:
    names: set[tuple[str, str]] = set()
    for meta in GOLDEN.rglob(".metadata"):
        recording = _Recording(meta.read_bytes())
        recording.load()
        names |= recording.names
        load_metadata(meta)  # the allow-listed unpickler reads it
    planner = {n for m, n in names if m == "torch.distributed.checkpoint.planner"}
    assert planner == set(SAVE_PLAN_CLASSES)
    assert names <= set(allowed_globals())
    assert not {n for m, n in allowed_globals() if m == "torch.distributed.checkpoint.planner"} - planner


def _ids_and_references(kind: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    with safe_open(str(mcore_golden.logits_file(kind)), "pt") as f:
        ids = torch.tensor(json.loads(f.metadata()["ids"]))
        return ids, {k: f.get_tensor(k) for k in f.keys()}


def _logits(kind: str, step: int, dtype: str) -> torch.Tensor:
    source = ModelSource(mcore_golden.model_config(kind), mcore_golden.tokenizer())
    loaded = load_checkpoint(GOLDEN / kind / f"step_{step}", dtype=dtype, source=source)
    ids, _ = _ids_and_references(kind)
    with torch.no_grad():
        out: torch.Tensor = loaded.model(ids).logits.float()
    return out


@pytest.mark.parametrize("kind", SERIES)
def test_fp32_logits_equal_megatron_cores_own_forward(kind: str) -> None:
    _, refs = _ids_and_references(kind)
    for step in STEPS:
        ours, theirs = _logits(kind, step, "fp32"), refs[f"step_{step}.fp32"]
        assert (ours - theirs).abs().max().item() <= FP32_TOLERANCE, (kind, step)
        assert torch.equal(ours.argmax(-1), theirs.argmax(-1)), (kind, step)


@pytest.mark.parametrize("kind", ["dense-tp2"])  # the dense series trained in bf16 (dense-tp1 is fp32)
def test_bf16_logits_are_within_megatron_cores_own_bf16_noise(kind: str) -> None:
    _, refs = _ids_and_references(kind)
    noise = max((refs[f"step_{s}"] - refs[f"step_{s}.fp32"]).abs().max().item() for s in STEPS)
    assert noise > 0  # megatron-core's bf16 forward did run in bf16
    for step in STEPS:
        exact = refs[f"step_{step}.fp32"]
        ours = _logits(kind, step, "bf16")
        assert (ours - exact).abs().max().item() <= 2 * noise, (kind, step, noise)
        top2 = exact.topk(2, dim=-1).values
        clear = (top2[..., 0] - top2[..., 1]) > 2 * noise
        assert clear.any()
        assert torch.equal(ours.argmax(-1)[clear], exact.argmax(-1)[clear]), (kind, step)


def _metadata_with(tmp_path: Path, change: object) -> Path:
    """A copy of dense-tp1's step 18 whose `.metadata` is changed by `change(metadata)`."""
    import shutil

    step = tmp_path / "step_18"
    shutil.copytree(GOLDEN / "dense-tp1" / "step_18", step)
    meta = step / ITERATION / ".metadata"
    metadata = load_metadata(meta)
    change(metadata)  # type: ignore[operator]
    meta.write_bytes(pickle.dumps(metadata))
    return step


def test_a_tensor_record_outside_its_shard_is_refused_naming_shard_and_key(tmp_path: Path) -> None:
    def stretch(metadata: object) -> None:
        index = next(i for i in metadata.storage_data if i.fqn == "output_layer.weight")  # type: ignore[attr-defined]
        info = metadata.storage_data[index]  # type: ignore[attr-defined]
        info.length = 10**9

    step = _metadata_with(tmp_path, stretch)
    source = ModelSource(mcore_golden.model_config("dense-tp1"), mcore_golden.tokenizer())
    with pytest.raises(
        CheckpointError,
        match=r"__0_\d\.distcp: output_layer\.weight chunk at \[0, 0\] is stored at bytes .* past the shard",
    ):
        load_checkpoint(step, dtype="fp32", source=source)


def test_a_chunk_outside_its_tensor_is_refused_naming_the_key(tmp_path: Path) -> None:
    def shift(metadata: object) -> None:
        chunk = metadata.state_dict_metadata["output_layer.weight"].chunks[0]  # type: ignore[attr-defined]
        chunk.sizes = torch.Size([chunk.sizes[0] + 1, chunk.sizes[1]])

    step = _metadata_with(tmp_path, shift)
    source = ModelSource(mcore_golden.model_config("dense-tp1"), mcore_golden.tokenizer())
    with pytest.raises(
        CheckpointError,
        match=r"\.metadata: output_layer\.weight chunk at \[0, 0\] of \[301, 32\] lies outside the tensor",
    ):
        load_checkpoint(step, dtype="fp32", source=source)
