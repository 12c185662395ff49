"""Weights files whose header lies about where their bytes are, and DCP pickles that set what they may not: a
safetensors file is parsed with every bound checked before a tensor is viewed, and a pickle's BUILD sets only
the fields its class's allow list names. Each is an honest file written by the real safetensors library (a tiny
Hugging Face model, as `fixtures.write_hf` saves it), then its header rewritten: each is refused naming the
file and the tensor, never read from another tensor's bytes or from past the file."""

from __future__ import annotations

import io
import json
import pickle
import shutil
import struct
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
import torch

from recorder.checkpoints.evaluable import load_checkpoint
from recorder.checkpoints.hugging_face.safetensors_header import HeaderError, read_header
from recorder.checkpoints.torch_dcp.safe_metadata import load_metadata
from recorder.checkpoints.torch_dcp.torch_save_view import TorchSaveError, view_tensor
from tests.checkpoints import fixtures
from trainer.policy.errors import CheckpointError, UnsafeMetadataError


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok, model = fixtures.tiny()
    return fixtures.write_hf(tmp_path_factory.mktemp("hf"), tok, model, shard="1GB")


def _copy(honest: Path, to: Path) -> Path:
    to.mkdir()
    for f in honest.iterdir():
        (to / f.name).write_bytes(f.read_bytes())
    return to / "model.safetensors"


def _rewrite(path: Path, edit: Any) -> dict[str, Any]:
    """Rewrite the header of the safetensors file at `path` through `edit(header)`; the data stays as it was."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    edit(header)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + length :])
    return header  # type: ignore[no-any-return]


def _same_size_pair(header: dict[str, Any]) -> tuple[str, str]:
    by_size: dict[tuple[str, int], str] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        key = (spec["dtype"], spec["data_offsets"][1] - spec["data_offsets"][0])
        if key in by_size and key[1] > 0:
            return by_size[key], name
        by_size[key] = name
    raise AssertionError("no two tensors of one size")


def _refused(shard: Path, *words: str) -> str:
    with pytest.raises(CheckpointError) as loaded:
        load_checkpoint(shard.parent, dtype="fp32")
    with pytest.raises(HeaderError) as read:
        read_header(shard)
    for text in (str(loaded.value), str(read.value)):
        assert text.startswith(f"{shard}: ") and all(w in text for w in words), text
    return str(loaded.value)


def test_offsets_out_of_order_are_refused_naming_the_tensor(honest: Path, tmp_path: Path) -> None:
    shard = _copy(honest, tmp_path / "hf")
    name = "model.norm.weight"

    def reverse(header: dict[str, Any]) -> None:
        begin, end = header[name]["data_offsets"]
        header[name]["data_offsets"] = [end, begin]

    _rewrite(shard, reverse)
    _refused(shard, repr(name), "not in order")


def test_offsets_past_the_file_are_refused_naming_the_tensor(honest: Path, tmp_path: Path) -> None:
    shard = _copy(honest, tmp_path / "hf")
    name = "model.norm.weight"

    def past(header: dict[str, Any]) -> None:
        begin, end = header[name]["data_offsets"]
        header[name]["data_offsets"] = [begin + 2**20, end + 2**20]

    _rewrite(shard, past)
    _refused(shard, repr(name), "past the", "bytes of data the file holds")


def test_a_tensor_read_from_another_tensors_bytes_is_refused_naming_both(honest: Path, tmp_path: Path) -> None:
    shard = _copy(honest, tmp_path / "hf")
    pair: list[str] = []

    def overlap(header: dict[str, Any]) -> None:
        pair.extend(_same_size_pair(header))
        header[pair[1]]["data_offsets"] = list(header[pair[0]]["data_offsets"])

    _rewrite(shard, overlap)
    text = _refused(shard, "overlap: one would be read from the other's bytes")
    assert all(repr(n) in text for n in pair), text


def test_a_tensor_whose_offsets_hold_fewer_bytes_than_its_shape_is_refused(honest: Path, tmp_path: Path) -> None:
    shard = _copy(honest, tmp_path / "hf")
    name = "model.norm.weight"

    def short(header: dict[str, Any]) -> None:
        begin, end = header[name]["data_offsets"]
        header[name]["shape"] = [header[name]["shape"][0] * 2]

    _rewrite(shard, short)
    _refused(shard, repr(name), "but its data_offsets")


def test_a_header_length_past_the_end_of_the_file_is_refused(honest: Path, tmp_path: Path) -> None:
    shard = _copy(honest, tmp_path / "hf")
    shard.write_bytes(struct.pack("<Q", 2**40) + b"{}")
    _refused(shard, "header of 1,099,511,627,776 bytes, past the end of the file (10 bytes)")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tok, model = fixtures.tiny()
    return fixtures.write_snapshot(tmp_path_factory.mktemp("run"), 7, tok, model)


def test_a_metadata_pickle_setting_a_field_its_class_does_not_have_is_refused(snapshot: Path, tmp_path: Path) -> None:
    """DCP's own `.metadata`, read through the safe loader and pickled again with one attribute more on a
    tensor's record (`requires_grad`, which TensorStorageMetadata does not have): BUILD would set it."""
    run = tmp_path / "run"
    shutil.copytree(snapshot.parent.parent, run)
    meta = run / "snapshots" / "step_7" / ".metadata"
    loaded = load_metadata(meta)
    fqn = next(iter(loaded.state_dict_metadata))
    vars(loaded.state_dict_metadata[fqn])["requires_grad"] = True
    meta.write_bytes(pickle.dumps(loaded, protocol=4))
    with pytest.raises(UnsafeMetadataError, match="sets 'requires_grad' on a TensorStorageMetadata") as e:
        load_checkpoint(meta.parent, dtype="fp32")
    assert str(e.value).startswith(f"{meta}: ")


class _TensorWithState:
    """Pickles as torch.save pickles a tensor (its rebuild and storage), plus a state for BUILD to set."""

    def __init__(self, t: torch.Tensor) -> None:
        self.t = t

    def __reduce_ex__(self, protocol: Any) -> Any:
        rebuild, args = self.t.__reduce_ex__(protocol)
        return rebuild, args, (True, OrderedDict(), None)  # Tensor.__setstate__: requires_grad, hooks


def test_a_chunk_pickle_whose_state_sets_requires_grad_is_refused() -> None:
    honest, hostile = io.BytesIO(), io.BytesIO()
    torch.save(torch.arange(4.0), honest)
    torch.save(_TensorWithState(torch.arange(4.0)), hostile)
    buf = memoryview(bytearray(honest.getvalue()))
    assert not view_tensor(buf, 0, len(buf)).requires_grad
    buf = memoryview(bytearray(hostile.getvalue()))
    with pytest.raises(TorchSaveError, match="sets attributes on a Tensor"):
        view_tensor(buf, 0, len(buf))
