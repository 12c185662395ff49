"""A NeMo-RL series saved by two pipeline stages (tests/golden/mcore/dense-pp2: megatron-core 0.16.1, PP=2
over gloo, one layer per stage) read as its twin saved by one rank (dense-tp1, whose checkpoint each stage
loaded through megatron-core's own resharding load before saving its part).

What megatron-core writes: each stage's rows of the stacked layer axis under the global layer number (stage
1's layer at row 1, in stage 1's files), the embedding in the first stage's files, the final norm and the
output layer in the last's. Our loader gives the same tensors as the twin's and logits equal to megatron-core's
PP=2 forward; a layer axis or layer number that is not the model's is refused naming the `.metadata` and key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from recorder.checkpoints.detect import ModelSource
from recorder.checkpoints.evaluable import load_checkpoint
from recorder.checkpoints.load import every_file, read_dcp
from recorder.checkpoints.megatron.mcore_names import to_hf
from recorder.checkpoints.readers import detect
from recorder.checkpoints.torch_dcp.safe_metadata import load_metadata
from tests.kit import mcore_golden
from tests.kit.mcore_golden import GOLDEN, ITERATION, STEPS, TWINS
from trainer.policy.errors import CheckpointError

PP, TWIN = "dense-pp2", TWINS["dense-pp2"]
FP32_TOLERANCE = 1e-4


def _source(kind: str) -> ModelSource:
    return ModelSource(mcore_golden.model_config(kind), mcore_golden.tokenizer())


def _ids() -> torch.Tensor:
    from safetensors import safe_open

    with safe_open(str(mcore_golden.logits_file(PP)), "pt") as f:
        return torch.tensor(json.loads(f.metadata()["ids"]))


def test_each_stage_saved_its_own_layer_under_its_global_number() -> None:
    metadata = load_metadata(GOLDEN / PP / "step_18" / ITERATION / ".metadata")
    files: dict[str, set[str]] = {}
    rows: dict[str, set[str]] = {}
    for index, record in metadata.storage_data.items():
        if index.offset is None:
            continue
        rank = record.relative_path.split("_")[2]  # __<rank>_<writer>.distcp
        files.setdefault(index.fqn, set()).add(rank)
        if index.fqn.startswith("decoder.layers."):
            rows.setdefault(f"layer {index.offset[0]}", set()).add(rank)
    assert files["embedding.word_embeddings.weight"] == {"0"}
    assert files["output_layer.weight"] == files["decoder.final_layernorm.weight"] == {"1"}
    assert rows == {"layer 0": {"0"}, "layer 1": {"1"}}
    layer_axis = metadata.state_dict_metadata["decoder.layers.self_attention.linear_qkv.weight"].size
    assert layer_axis[0] == 2  # the whole model's layers, not a stage's


@pytest.mark.parametrize("step", STEPS)
def test_the_pipeline_series_loads_the_same_weights_and_logits_as_its_twin(step: int) -> None:
    pp = load_checkpoint(GOLDEN / PP / f"step_{step}", dtype="fp32", source=_source(PP), keep_state=True)
    one = load_checkpoint(GOLDEN / TWIN / f"step_{step}", dtype="fp32", source=_source(TWIN), keep_state=True)
    assert pp.state is not None and one.state is not None
    assert pp.state.keys() == one.state.keys()
    assert all(torch.equal(pp.state[k], one.state[k]) for k in pp.state)
    with torch.no_grad():
        ours, twins = pp.model(_ids()).logits.float(), one.model(_ids()).logits.float()
    assert (ours - twins).abs().max().item() <= FP32_TOLERANCE
    megatron_pp, megatron_one = (load_file(str(mcore_golden.logits_file(k)))[f"step_{step}.fp32"] for k in (PP, TWIN))
    assert (ours - megatron_pp).abs().max().item() <= FP32_TOLERANCE
    assert (megatron_pp - megatron_one).abs().max().item() <= FP32_TOLERANCE
    assert torch.equal(ours.argmax(-1), megatron_pp.argmax(-1))


def _megatron_state(kind: str) -> dict[str, torch.Tensor]:
    """The raw Megatron tensors of step 18 under Megatron's names, as the reader puts the chunks together."""
    info = detect(GOLDEN / kind / "step_18", _source(kind))
    state, _ = read_dcp(info, every_file(info), None, torch.float32, 1)
    return state


def _config(kind: str) -> dict[str, object]:
    doc: dict[str, object] = json.loads((mcore_golden.model_config(kind) / "config.json").read_text())
    return doc


def test_a_layer_axis_that_is_not_the_models_is_refused_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config"
    shutil.copytree(mcore_golden.model_config(PP), config)
    (config / "config.json").write_text(json.dumps(_config(PP) | {"num_hidden_layers": 3}))
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(GOLDEN / PP / "step_18", dtype="fp32", source=ModelSource(config, mcore_golden.tokenizer()))
    said = str(e.value)
    assert said.startswith(str(GOLDEN / PP / "step_18" / ITERATION / ".metadata") + ": decoder.layers."), said
    assert "stacks 2 layers along its first axis, the model config has 3" in said


def test_a_stage_whose_layers_are_absent_is_refused_naming_them() -> None:
    state = _megatron_state("hybrid")  # per-layer names: layers 0-3
    first_stage = {k: v for k, v in state.items() if not k.startswith(("decoder.layers.2.", "decoder.layers.3."))}
    with pytest.raises(CheckpointError, match=r"^where: no tensor of layer 2, 3 \(decoder\.layers\.N\.\*\), the model"):
        to_hf(first_stage, _config("hybrid"), where=Path("where"))


def test_a_layer_numbered_past_the_models_last_is_refused_naming_the_key() -> None:
    state = _megatron_state("hybrid")
    moved = {k.replace("decoder.layers.3.", "decoder.layers.5."): v for k, v in state.items()}
    with pytest.raises(CheckpointError, match=r"^where: decoder\.layers\.5\.\S+ is layer 5, the model config has 4"):
        to_hf(moved, _config("hybrid"), where=Path("where"))
