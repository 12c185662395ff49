"""Every rollout backend against the rollout contract (tests/contract/rollout_contract.py). The vLLM engine's
subclass is in tests/trainer/test_vllm.py, which runs in the vLLM environment."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.contract.rollout_contract import RolloutContract
from trainer.rollout import RayRollout, Rollout, TorchRollout


class TestTorchRollout(RolloutContract):
    def start(self, model: Any, tokenizer: Any) -> Rollout:
        return TorchRollout(model, tokenizer)


@pytest.mark.usefixtures("ray_cluster")
@pytest.mark.slow  # the default tier keeps the in-process and thread rollouts' contract
class TestRayRollout(RolloutContract):
    """Three actors, each sampling a contiguous shard: the worker count changes no completion."""

    def start(self, model: Any, tokenizer: Any) -> Rollout:
        return RayRollout(model, tokenizer, workers=3, address=None)


@pytest.fixture(scope="class")
def gloo_group() -> Iterator[None]:
    """A gloo process group of one: what a data-parallel rank's refit gathers through."""
    import torch.distributed as dist

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.usefixtures("gloo_group")
class TestGatheredRollout(RolloutContract):
    """A data-parallel rank's rollout: an unsharded copy that `refit` fills from the FSDP2-sharded model."""

    def start(self, model: Any, tokenizer: Any) -> Rollout:
        import copy

        from torch.distributed.fsdp import fully_shard

        from trainer.parallel.data_parallel import GatheredRollout

        sharded = copy.deepcopy(model)
        fully_shard(sharded)
        return _ShardedSource(GatheredRollout(copy.deepcopy(model), tokenizer), sharded)


class _ShardedSource:
    """A GatheredRollout refitted, as in training, from a sharded model holding the plain model's weights."""

    def __init__(self, inner: Any, sharded: Any) -> None:
        self.inner, self.sharded = inner, sharded

    def generate(self, prompts: list[str], seeds: list[int], **kw: Any) -> list[list[int]]:
        out: list[list[int]] = self.inner.generate(prompts, seeds, **kw)
        return out

    def refit(self, model: Any) -> None:
        import torch
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

        with torch.no_grad():
            set_model_state_dict(self.sharded, model.state_dict(), options=StateDictOptions(full_state_dict=True))
        self.inner.refit(self.sharded)

    def close(self) -> None:
        self.inner.close()
