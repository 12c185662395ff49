"""A NeMo-RL MoE series saved with its experts spread over two ranks (tests/golden/mcore/moe-ep2: megatron-core
0.16.1, expert parallel 2 over gloo, two of the four experts on each rank) read as its twin saved by one rank
(moe, whose checkpoint each rank loaded through megatron-core's own resharding load before saving its part).

What megatron-core writes: the stacked experts' tensor `[layers, experts, ...]` whole in `.metadata`, each
rank's chunks at their global expert numbers (experts 2 and 3 at offsets 2 and 3, in rank 1's files). Our
loader gives the same tensors as the twin's and logits equal to megatron-core's EP=2 forward."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from recorder.checkpoints.detect import ModelSource
from recorder.checkpoints.evaluable import load_checkpoint
from recorder.checkpoints.torch_dcp.safe_metadata import load_metadata
from tests.kit import mcore_golden
from tests.kit.mcore_golden import GOLDEN, ITERATION, STEPS, TWINS

EP = "moe-ep2"
TWIN = TWINS[EP]
FP32_TOLERANCE = 1e-4
EXPERTS = "decoder.layers.mlp.experts.experts.linear_fc2.weight"


def test_each_rank_saved_its_experts_under_their_global_numbers() -> None:
    metadata = load_metadata(GOLDEN / EP / "step_18" / ITERATION / ".metadata")
    assert tuple(metadata.state_dict_metadata[EXPERTS].size)[:2] == (2, 4)  # every layer's every expert
    ranks: dict[int, set[str]] = {}
    for index, record in metadata.storage_data.items():
        if index.fqn == EXPERTS and index.offset is not None:
            ranks.setdefault(index.offset[1], set()).add(record.relative_path.split("_")[2])
    assert ranks == {0: {"0"}, 1: {"0"}, 2: {"1"}, 3: {"1"}}


@pytest.mark.parametrize("step", STEPS)
def test_the_expert_parallel_series_loads_the_same_weights_and_logits_as_its_twin(step: int) -> None:
    source = ModelSource(mcore_golden.model_config(EP), mcore_golden.tokenizer())
    ep = load_checkpoint(GOLDEN / EP / f"step_{step}", dtype="fp32", source=source, keep_state=True)
    one = load_checkpoint(GOLDEN / TWIN / f"step_{step}", dtype="fp32", source=source, keep_state=True)
    assert ep.state is not None and one.state is not None
    assert ep.state.keys() == one.state.keys()
    assert all(torch.equal(ep.state[k], one.state[k]) for k in ep.state)
    with safe_open(str(mcore_golden.logits_file(EP)), "pt") as f:
        ids = torch.tensor(json.loads(f.metadata()["ids"]))
    with torch.no_grad():
        ours = ep.model(ids).logits.float()
    megatron_ep, megatron_one = (load_file(str(mcore_golden.logits_file(k)))[f"step_{step}.fp32"] for k in (EP, TWIN))
    assert (ours - megatron_ep).abs().max().item() <= FP32_TOLERANCE
    assert (megatron_ep - megatron_one).abs().max().item() <= FP32_TOLERANCE
    assert torch.equal(ours.argmax(-1), megatron_ep.argmax(-1))
