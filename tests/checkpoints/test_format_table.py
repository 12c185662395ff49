"""A new checkpoint format is one plugin: here a throwaway one (a model's tensors in a numpy `.npz` beside its
config.json) is a reader row and a recorded row on one `recorder.checkpoints.formats.FormatPlugin`, and
detection, the hashed load, the model build and the recorded format's checks all follow from it, with nothing
else of the product changed."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from recorder.checkpoints import formats as checkpoint_formats
from recorder.checkpoints import load, readers
from recorder.checkpoints.detect import CheckpointInfo
from recorder.checkpoints.evaluable import load_checkpoint
from recorder.checkpoints.formats import FormatPlugin, RecordedFormat, declared_format, declared_reader, recorded_format
from recorder.checkpoints.manifest import Manifest, ShardDigest
from recorder.checkpoints.readers import detect
from tests.checkpoints import fixtures

IDS = [1, 7, 12, 40, 3, 9]


def _detect_npz(path: Path) -> CheckpointInfo | None:
    if not ((path / "model.npz").is_file() and (path / "config.json").is_file()):
        return None
    config = json.loads((path / "config.json").read_text())
    return CheckpointInfo(
        path=path,
        format=declared_reader("npz"),
        step=None,
        world_size=None,
        source_run=None,
        config=config,
        tokenizer_dir=path,
        weights_dir=path,
    )


def _read_npz(
    info: CheckpointInfo, files: list[Path], expected: Manifest | None, dtype: torch.dtype, threads: int | None
) -> tuple[dict[str, Any], tuple[ShardDigest, ...]]:
    def parse(buf: memoryview, _: Path) -> dict[str, torch.Tensor]:
        arrays = np.load(io.BytesIO(bytes(buf)), allow_pickle=False)
        return {k: torch.from_numpy(arrays[k]).to(dtype) for k in arrays.files}

    read = load.read_shards(info, files, expected, parse, threads)
    return {k: v for _, part in read.values() for k, v in part.items()}, tuple(d for d, _ in read.values())


NPZ = readers.Reader(
    name=declared_reader("npz"),
    expects="model.npz with config.json (numpy)",
    detect=_detect_npz,
    shard_files=lambda info: [info.weights_dir / "model.npz"],
    read=_read_npz,
    sharded=False,
)
NPZ_ROW = RecordedFormat(
    name=declared_format("npz-dir"), reader=declared_reader("npz"), imported=True, files="imported-shards"
)
NPZ_PLUGIN = FormatPlugin(name="npz", recorded=(NPZ_ROW,), reader=f"{__name__}:NPZ")


@pytest.fixture
def npz_format(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint_formats, "PLUGINS", checkpoint_formats.PLUGINS.copy())
    checkpoint_formats.PLUGINS.register(NPZ_PLUGIN)


def _write_npz(path: Path, tok: Any, model: Any) -> Path:
    path.mkdir(parents=True)
    np.savez(path / "model.npz", **{k: v.detach().numpy() for k, v in model.state_dict().items()})
    (path / "config.json").write_text(json.dumps(model.config.to_dict()))
    tok.save_pretrained(path)
    return path


def test_a_format_added_by_its_plugin_is_detected_loaded_and_checked(tmp_path: Path, npz_format: None) -> None:
    tok, model = fixtures.tiny()
    hf = fixtures.write_hf(tmp_path / "hf", tok, model)
    npz = _write_npz(tmp_path / "npz", tok, model)
    assert detect(npz).format == "npz"
    loaded, reference = load_checkpoint(npz, dtype="fp32"), load_checkpoint(hf, dtype="fp32")
    assert [s.path for s in loaded.manifest.shards] == ["model.npz"]
    assert torch.equal(fixtures.logits(loaded.model, IDS), fixtures.logits(reference.model, IDS))
    assert recorded_format("npz-dir").imported and recorded_format("npz-dir").reader == "npz"
    # registered after Hugging Face's, its reader is still asked before the one that takes any config.json
    assert [r.name for r in readers.all_readers()][-2:] == ["npz", "hf-safetensors"]


def test_without_its_plugin_the_format_is_refused_naming_what_each_reader_expects(tmp_path: Path) -> None:
    tok, model = fixtures.tiny()
    npz = _write_npz(tmp_path / "npz", tok, model)
    (npz / "config.json").rename(npz / "config.json.bak")
    with pytest.raises(Exception, match=r"expected policy/weights/iter_\*/.*\.metadata with \*\.distcp"):
        detect(npz)
    with pytest.raises(KeyError, match="npz-dir"):
        recorded_format("npz-dir")
