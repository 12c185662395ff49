"""Weights files whose header lies about where their bytes are: a safetensors file is parsed with every bound
checked before a tensor is viewed. Each is an honest file written by the real safetensors library (a tiny
Hugging Face model, as `fixtures.write_hf` saves it), then its header rewritten: each is refused naming the
file and the tensor, never read from another tensor's bytes or from past the file."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from recorder.safetensors_header import HeaderError, read_header
from tests.checkpoints import fixtures
from trainer.policy.checkpoints.evaluable import load_checkpoint
from trainer.policy.errors import CheckpointError


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
