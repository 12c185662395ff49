"""A DCP shard's tensor chunks read in batches of alike archives (chunk_batches, dcp_chunks), on checkpoints
real torch DCP wrote: the same tensors as torch's own load, alike archives read as one batch, an archive that
differs anywhere but its CRCs, weights and save id read on its own; and the `.metadata` unpickler refusing a
state set on a shared enum member or a torch.Size."""

from __future__ import annotations

import io
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.metadata import _MEM_FORMAT_ENCODING

from recorder.checkpoints.readers import detect, load_state_dict
from recorder.checkpoints.torch_dcp.chunk_batches import batches
from recorder.checkpoints.torch_dcp.safe_metadata import load_metadata
from tests.checkpoints import fixtures
from trainer.policy.errors import CheckpointError, UnsafeMetadataError


def _tensors() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    out = {f"experts.{e}.weight": torch.randn(4, 8, generator=gen) for e in range(40)}
    out |= {f"norms.{e}.weight": torch.randn(32, generator=gen) for e in range(5)}  # as many elements: same length
    out["embedding"] = torch.randn(64, 8, generator=gen).to(torch.bfloat16)
    return out


def _checkpoint(tmp_path: Path) -> Path:
    path = fixtures.write_dcp(tmp_path / "ckpt", _tensors())
    (path / "config.json").write_text('{"model_type": "llama"}')  # detection asks for a model config beside it
    return path


def _torch_load(path: Path) -> dict[str, torch.Tensor]:
    state = {k: torch.empty_like(v) for k, v in _tensors().items()}
    dcp.load(state, checkpoint_id=str(path), no_dist=True)
    return state


def _shard(path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    metadata = load_metadata(path / ".metadata")
    records = sorted(metadata.storage_data.values(), key=lambda s: s.offset)
    (name,) = {r.relative_path for r in records}
    return path / name, np.array([r.offset for r in records]), np.array([r.length for r in records])


def test_the_tensors_are_torchs_own_and_alike_archives_are_one_batch(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path)
    ours = load_state_dict(detect(path), dtype="fp32")[0]
    theirs = _torch_load(path)
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k].float()) for k in ours)
    shard, starts, lengths = _shard(path)
    found = list(batches(memoryview(bytearray(shard.read_bytes())), starts, lengths))
    assert sorted(len(b.index) for _, b in found) == [1, 5, 40]  # the embedding, the norms, the experts
    assert all(kind is not None for kind, _ in found)


def test_an_archive_differing_outside_its_crcs_weights_and_save_id_is_read_on_its_own(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path)
    shard, starts, lengths = _shard(path)
    data = bytearray(shard.read_bytes())
    at = data.index(b"archive/byteorder", int(starts[7])) - 30  # the 8th archive's byteorder record
    # its local header's last modification time: nothing a reader uses, but not a byte alike archives may differ in
    data[at + 10] ^= 1
    shard.write_bytes(bytes(data))
    found = list(batches(memoryview(bytearray(data)), starts, lengths))
    alone = [b for kind, b in found if kind is not None and len(b.index) == 1 and b.index[0] == 7]
    assert len(alone) == 1  # read in full as a kind of its own, not taken for its neighbours
    ours = load_state_dict(detect(path), dtype="fp32")[0]
    theirs = _torch_load(path)
    assert all(torch.equal(ours[k], theirs[k].float()) for k in ours)


def test_an_archive_whose_shape_differs_from_its_metadata_is_refused_naming_the_tensor(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path)
    metadata = load_metadata(path / ".metadata")
    md = metadata.state_dict_metadata["experts.3.weight"]
    md.chunks[0] = type(md.chunks[0])(offsets=torch.Size([0, 0]), sizes=torch.Size([8, 4]))
    metadata.state_dict_metadata["experts.3.weight"] = type(md)(md.properties, torch.Size([8, 4]), md.chunks)
    (path / ".metadata").write_bytes(pickle.dumps(metadata))
    with pytest.raises(CheckpointError, match=r"experts\.3\.weight at byte \d+ is \[4, 8\], \.metadata says \[8, 4\]"):
        load_state_dict(detect(path), dtype="fp32")


def _build_on(module: str, name: str, args: bytes) -> bytes:
    """A protocol-2 pickle calling `module.name(*args)`, then setting `_value_` on what it made (BUILD)."""
    key = b"_value_"
    state = b"}X" + struct.pack("<I", len(key)) + key + b"K\x09s"
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"(" + args + b"tR" + state + b"b."


def test_a_state_set_on_the_shared_memory_format_enum_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    meta = tmp_path / ".metadata"
    meta.write_bytes(_build_on("torch.distributed.checkpoint.metadata", "_MEM_FORMAT_ENCODING", b"K\x00"))
    with pytest.raises(UnsafeMetadataError, match="sets attributes on a _MEM_FORMAT_ENCODING"):
        load_metadata(meta)
    assert _MEM_FORMAT_ENCODING(0).value == 0


def test_a_state_set_on_a_torch_size_is_refused(tmp_path: Path) -> None:
    meta = tmp_path / ".metadata"
    meta.write_bytes(_build_on("torch", "Size", b"]q\x00K\x02a"))
    with pytest.raises(CheckpointError, match=r"not torch distributed checkpoint metadata \(AttributeError"):
        load_metadata(meta)


def test_metadata_read_through_the_allow_list_equals_torchs_own(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path)
    ours = load_metadata(path / ".metadata")
    theirs = pickle.load(io.BytesIO((path / ".metadata").read_bytes()))  # torch's own file, written above
    assert type(ours) is type(theirs)
    assert ours.state_dict_metadata == theirs.state_dict_metadata
    assert ours.storage_data == theirs.storage_data
    assert all(
        type(a) is type(b)
        for a, b in zip(ours.state_dict_metadata.values(), theirs.state_dict_metadata.values(), strict=True)
    )
