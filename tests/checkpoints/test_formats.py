"""Every checkpoint format detected from its files, loaded with each shard hashed as it is read, and
giving the model the same logits as the Hugging Face safetensors of the same weights."""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path

import pytest
import torch

from recorder.checkpoints.evaluable import load_checkpoint
from recorder.checkpoints.manifest import Manifest, ShardDigest
from recorder.checkpoints.readers import detect, left_out, load_state_dict
from recorder.checkpoints.torch_dcp.safe_metadata import load_metadata
from tests.checkpoints import fixtures
from trainer.policy.errors import CheckpointError, UnsafeMetadataError

IDS = [1, 7, 12, 40, 3, 9]


@pytest.fixture(scope="module")
def weights() -> tuple[object, object]:
    return fixtures.tiny()


def test_hf_safetensors_detected_and_loaded_in_the_asked_dtype(tmp_path: Path, weights: tuple) -> None:
    tok, model = weights
    path = fixtures.write_hf(tmp_path / "hf", tok, model)
    info = detect(path)
    assert (info.format, info.world_size, info.tokenizer_dir) == ("hf-safetensors", None, path.resolve())
    loaded = load_checkpoint(path, dtype="bf16")
    assert (loaded.dtype, loaded.device) == ("bfloat16", "cpu")
    assert len(loaded.manifest.shards) == len(list(path.glob("*.safetensors"))) > 1
    fp32 = load_checkpoint(path, dtype="fp32")
    assert torch.equal(fixtures.logits(fp32.model, IDS), fixtures.logits(model, IDS))


def test_a_dcp_snapshot_and_an_fsdp2_archive_give_the_safetensors_logits(tmp_path: Path, weights: tuple) -> None:
    tok, model = weights
    snap = fixtures.write_snapshot(tmp_path / "run", 7, tok, model)
    archive = fixtures.write_fsdp2_archive(tmp_path / "job", 3, tok, model, world_size=8)
    s, a = detect(snap), detect(archive)
    assert (s.format, s.step, s.world_size, s.source_run) == ("torch-dcp", 7, 1, tmp_path / "run")
    assert (a.format, a.step, a.world_size, a.source_run) == ("torch-dcp", 30, 8, tmp_path / "job")
    want = fixtures.logits(model, IDS)
    for path in (snap, archive):
        assert torch.equal(fixtures.logits(load_checkpoint(path, dtype="fp32").model, IDS), want)


def test_a_dcp_with_optimizer_state_and_scalars_loads_the_model_alone(tmp_path: Path, weights: tuple) -> None:
    """A training snapshot as torch DCP saves one: the model beside AdamW's state (tensors and the param
    groups' plain numbers, which DCP stores as byte entries) and the step as an int."""
    tok, model = weights
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.tensor([IDS])).logits.sum().backward()
    optimizer.step()
    snap = fixtures.write_dcp(
        tmp_path / "snapshots" / "step_10",
        {"model": fixtures.state(model), "optim": optimizer.state_dict(), "step": 10},
    )
    (tmp_path / "config.json").write_text(json.dumps(model.config.to_dict()))
    info = detect(snap)
    state, manifest = load_state_dict(info, dtype="fp32")
    assert set(state) == {f"model.{k}" for k in model.state_dict()}
    assert all(torch.equal(state[f"model.{k}"], v) for k, v in model.state_dict().items())
    assert {s.path for s in manifest.shards} == {".metadata", *(p.name for p in snap.glob("*.distcp"))}


def test_megatron_core_weights_in_nemo_rl_layout_load_with_the_base_models_config(tmp_path: Path) -> None:
    from recorder.checkpoints.detect import ModelSource
    from recorder.store.run_files import tree_digest
    from tests.kit import mcore_golden

    step = mcore_golden.copy_series("dense-tp2", tmp_path / "series") / "step_19"  # two ranks' shards
    source = ModelSource(mcore_golden.model_config("dense-tp2"), mcore_golden.tokenizer())
    info = detect(step, source)
    assert (info.format, info.step, info.world_size) == ("mcore-torch-dist", 19, 2)
    assert (info.weights_dir, info.model_name) == (step / "policy" / "weights", "recorder-tests/tiny-dense-tp2")
    loaded = load_checkpoint(step, dtype="fp32", source=source)
    assert type(loaded.model).__name__ == "Qwen3ForCausalLM"
    # the manifest covers every file of policy/weights, as the NeMo-RL import's tree digest does
    assert loaded.manifest.root == tree_digest(step / "policy" / "weights")[0]
    # and neither holds a copy tool's temporary file left beside the shards (rsync's `.<name>.<6 characters>`)
    (step / "policy" / "weights" / ".common.pt.Xy12Ab").write_bytes(b"half a copy")
    assert tree_digest(step / "policy" / "weights")[0] == loaded.manifest.root
    assert load_checkpoint(step, dtype="fp32", source=source).manifest.root == loaded.manifest.root


def test_a_shard_altered_or_deleted_is_named_and_a_file_no_metadata_names_is_no_shard(
    tmp_path: Path, weights: tuple
) -> None:
    tok, model = weights
    snap = fixtures.write_snapshot(tmp_path / "run", 1, tok, model)
    _, manifest = load_state_dict(detect(snap), dtype="fp32")
    shard = snap / "__0_0.distcp"
    original = shard.read_bytes()
    data = bytearray(original)
    data[len(data) // 2] ^= 1
    shard.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"__0_0\.distcp: shard sha256"):
        load_state_dict(detect(snap), dtype="fp32", expected=manifest)
    shard.write_bytes(original)
    (snap / "__1_0.distcp").write_bytes(b"x")  # .metadata places nothing in it: never read, left out
    assert load_state_dict(detect(snap), dtype="fp32", expected=manifest)[1] == manifest
    assert left_out(detect(snap)) == [snap / "__1_0.distcp"]
    (snap / "__1_0.distcp").unlink()
    shard.unlink()
    with pytest.raises(CheckpointError, match=r"__0_0\.distcp: shard missing"):
        load_state_dict(detect(snap), dtype="fp32", expected=manifest)


def test_manifest_round_trips_and_its_root_is_over_the_shard_list() -> None:
    m = Manifest((ShardDigest("b", 2, "2" * 64), ShardDigest("a", 1, "1" * 64)))
    assert [s.path for s in m.shards] == ["a", "b"]
    assert Manifest.from_dict(json.loads(json.dumps(m.to_dict()))) == m
    changed = m.to_dict() | {"shards": [m.to_dict()["shards"][0]]}
    with pytest.raises(CheckpointError, match="manifest was altered"):
        Manifest.from_dict(changed)


class _RunsACommand:
    """Unpickling this would call os.system: the hostile .metadata's payload."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return (os.system, (f"touch {self.marker}",))


def test_a_hostile_metadata_is_refused_and_nothing_of_it_runs(tmp_path: Path, weights: tuple) -> None:
    tok, model = weights
    snap = fixtures.write_snapshot(tmp_path / "run", 1, tok, model)
    assert type(load_metadata(snap / ".metadata")).__name__ == "Metadata"  # torch's own, allowed
    marker = tmp_path / "ran"
    (snap / ".metadata").write_bytes(pickle.dumps(_RunsACommand(marker)))
    with pytest.raises(UnsafeMetadataError, match=r"\.metadata: names posix\.system"):
        load_checkpoint(snap, dtype="fp32")
    assert not marker.exists()


def test_a_hostile_tensor_chunk_is_refused_naming_shard_and_tensor_and_nothing_runs(
    tmp_path: Path, weights: tuple
) -> None:
    tok, model = weights
    snap = fixtures.write_snapshot(tmp_path / "run", 1, tok, model)
    fqn, info = max(
        ((i.fqn, si) for i, si in load_metadata(snap / ".metadata").storage_data.items()), key=lambda p: p[1].length
    )
    marker, hostile = tmp_path / "ran", io.BytesIO()
    torch.save(_RunsACommand(marker), hostile)  # a torch.save archive whose pickle calls os.system
    shard = snap / info.relative_path
    data = bytearray(shard.read_bytes())
    end = info.offset + info.length
    data[end - len(hostile.getvalue()) : end] = hostile.getvalue()  # the chunk's region now ends in it
    shard.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=rf"{shard.name}: {fqn} at byte {info.offset} .*names posix\.system"):
        load_checkpoint(snap, dtype="fp32")
    assert not marker.exists()


def test_a_directory_of_no_known_format_says_what_was_expected(tmp_path: Path) -> None:
    (tmp_path / "x.bin").write_bytes(b"0")
    with pytest.raises(CheckpointError, match=r"expected .*config\.json with \*\.safetensors \(Hugging Face\)"):
        detect(tmp_path)


def test_a_megatron_series_finds_its_base_model_in_the_hugging_face_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    import yaml

    from tests.kit import mcore_golden

    series = mcore_golden.copy_series("moe", tmp_path / "series")
    snapshot = tmp_path / "hub" / "models--recorder-tests--tiny-moe" / "snapshots" / "0123abcd"
    shutil.copytree(mcore_golden.model_config("moe"), snapshot)
    for f in mcore_golden.tokenizer().iterdir():
        shutil.copyfile(f, snapshot / f.name)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    step = series / "step_18"
    assert yaml.safe_load((step / "config.yaml").read_text())["policy"]["model_name"] == "recorder-tests/tiny-moe"
    info = detect(step)
    assert (info.config["model_type"], info.tokenizer_dir) == ("qwen2_moe", snapshot)
    assert type(load_checkpoint(step, dtype="fp32").model).__name__ == "Qwen2MoeForCausalLM"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(CheckpointError, match="pass --model-config DIR"):
        load_checkpoint(step, dtype="fp32")
