"""What a DCP `.metadata` declares is checked against what the shards hold before any memory is allocated.

Each attack starts from a checkpoint real torch DCP wrote (tests/checkpoints/fixtures.py) and rewrites its
`.metadata` (a pickle of torch's own classes, rewritten here with torch itself): a tensor with no chunk (it
imported and verified, as uninitialised memory), a 4 TiB declared tensor (a traceback), two chunks covering
the same elements, a chunk said to be larger than its storage record. Each refusal names the file (the
`.metadata` or the shard) and the key."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from recorder.checkpoints.readers import detect, load_state_dict
from tests.checkpoints import fixtures
from trainer.policy.errors import CheckpointError

KEY = "w"


def _checkpoint(tmp_path: Path) -> Path:
    path = fixtures.write_dcp(tmp_path / "ckpt", {KEY: torch.arange(12.0).reshape(3, 4), "b": torch.ones(5)})
    (path / "config.json").write_text('{"model_type": "llama"}')  # detection asks for a model config beside it
    return path


def _rewrite(path: Path, edit: Callable[[Any], None]) -> None:
    meta = path / ".metadata"
    with open(meta, "rb") as f:
        metadata = pickle.load(f)  # the fixture's own file, written by torch a line above
    edit(metadata)
    with open(meta, "wb") as f:
        pickle.dump(metadata, f)


def _set_chunks(metadata: Any, chunks: list[Any], size: Any = None) -> None:
    md = metadata.state_dict_metadata[KEY]
    md.chunks[:] = chunks
    if size is not None:
        metadata.state_dict_metadata[KEY] = dataclasses.replace(md, size=torch.Size(size))


def _load(path: Path) -> dict[str, torch.Tensor]:
    return load_state_dict(detect(path), dtype="fp32")[0]


def test_the_honest_checkpoint_loads(tmp_path: Path) -> None:
    assert torch.equal(_load(_checkpoint(tmp_path))[KEY], torch.arange(12.0).reshape(3, 4))


def _chunk(metadata: Any) -> Any:
    return metadata.state_dict_metadata[KEY].chunks[0]


CASES: dict[str, tuple[Callable[[Any], None], str]] = {
    "no chunk": (lambda m: _set_chunks(m, []), "has no chunk"),
    "4 TiB declared": (lambda m: _set_chunks(m, [_chunk(m)], size=(2**40, 1024)), "is declared [1099511627776, 1024]"),
    "overlapping chunks": (lambda m: _set_chunks(m, [_chunk(m), _chunk(m)]), "overlap"),
    "a hole": (lambda m: _set_chunks(m, [dataclasses.replace(_chunk(m), sizes=torch.Size((2, 4)))]), "8 elements"),
}


@pytest.mark.parametrize("attack", CASES)
def test_metadata_that_does_not_cover_its_tensor_exactly_is_refused_naming_file_and_key(
    tmp_path: Path, attack: str
) -> None:
    path = _checkpoint(tmp_path)
    edit, words = CASES[attack]
    _rewrite(path, edit)
    with pytest.raises(CheckpointError) as refused:
        _load(path)
    assert f"{path / '.metadata'}: {KEY} " in str(refused.value) and words in str(refused.value), refused.value


def test_a_chunk_larger_than_its_storage_record_is_refused_naming_shard_and_key(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path)

    def longer(metadata: Any) -> None:  # the tensor and its chunk both declared 2**30 x 4: the shard holds 3 x 4
        _set_chunks(metadata, [dataclasses.replace(_chunk(metadata), sizes=torch.Size((2**30, 4)))], (2**30, 4))

    _rewrite(path, longer)
    with pytest.raises(CheckpointError) as refused:
        _load(path)
    shard = next(path.glob("*.distcp"))
    assert f"{shard}: {KEY} chunk at [0, 0] of [1073741824, 4] needs 17,179,869,184 bytes" in str(refused.value)
