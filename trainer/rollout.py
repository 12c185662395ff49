"""Rollout backends behind one interface: generate completions for (prompt, seed) pairs, refit weights.

- `TorchRollout` (default): the training model itself with trainer.policy.sampling (no refit needed).
- `RayRollout`: workers as Ray actors, each holding a copy of the model; weights pushed after every step.
- `VllmRollout` (trainer/vllm_rollout.py): a vLLM engine whose weights are reloaded after every step.
All use per-sample seeds, so the torch and Ray backends give identical completions for identical weights.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from trainer.policy.sampling import generate_ids
from trainer.policy.tokenizer import Tokenizer


class Rollout(Protocol):
    def generate(
        self, prompts: list[str], seeds: list[int], *, temperature: float, top_p: float, max_new_tokens: int
    ) -> list[list[int]]: ...

    def refit(self, model: Any) -> None: ...

    def close(self) -> None: ...


class TorchRollout:
    """Samples with the training model in-process."""

    def __init__(self, model: Any, tokenizer: Tokenizer) -> None:
        self.model, self.tokenizer = model, tokenizer

    def generate(
        self, prompts: list[str], seeds: list[int], *, temperature: float, top_p: float, max_new_tokens: int
    ) -> list[list[int]]:
        return generate_ids(
            self.model,
            self.tokenizer,
            prompts,
            temperature=temperature,
            top_p=top_p,
            max_new_tokens=max_new_tokens,
            seeds=seeds,
        )

    def refit(self, model: Any) -> None:
        """Nothing to do: the sampler reads the live weights."""

    def close(self) -> None:
        pass


class _RolloutWorker:
    """A Ray actor: one model copy; loads pushed weights; samples its shard."""

    def __init__(self, config_json: str, tokenizer_json: str, threads: int) -> None:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        from trainer.policy.tokenizer import from_json

        torch.set_num_threads(threads)
        fields = json.loads(config_json)
        cfg = AutoConfig.for_model(fields.pop("model_type"), **fields)
        self.model = AutoModelForCausalLM.from_config(cfg).float().eval()
        self.tokenizer = from_json(tokenizer_json)

    def load(self, state: dict[str, Any]) -> bool:
        self.model.load_state_dict(state, strict=True)
        return True

    def generate(
        self, prompts: list[str], seeds: list[int], temperature: float, top_p: float, max_new_tokens: int
    ) -> list[list[int]]:
        return generate_ids(
            self.model,
            self.tokenizer,
            prompts,
            temperature=temperature,
            top_p=top_p,
            max_new_tokens=max_new_tokens,
            seeds=seeds,
        )


class RayRollout:
    """Rollouts on `workers` Ray actors (a local cluster, or the one at `address`)."""

    def __init__(self, model: Any, tokenizer: Tokenizer, *, workers: int, address: str | None) -> None:
        import ray

        if not ray.is_initialized():
            ray.init(address=address or None, include_dashboard=False, log_to_driver=False, configure_logging=False)
            self._owns_ray = True
        else:
            self._owns_ray = False
        actor = ray.remote(num_cpus=0)(_RolloutWorker)
        self.workers: list[Any] = [
            actor.remote(model.config.to_json_string(), tokenizer.to_json(), 1) for _ in range(workers)
        ]
        self.refit(model)

    def generate(
        self, prompts: list[str], seeds: list[int], *, temperature: float, top_p: float, max_new_tokens: int
    ) -> list[list[int]]:
        import ray

        n = len(self.workers)
        size = -(-len(prompts) // n)  # contiguous shards, in order
        futures = [
            w.generate.remote(
                prompts[i * size : (i + 1) * size], seeds[i * size : (i + 1) * size], temperature, top_p, max_new_tokens
            )
            for i, w in enumerate(self.workers)
        ]
        return [ids for shard in ray.get(futures) for ids in shard]

    def refit(self, model: Any) -> None:
        import ray

        from trainer.saving.checkpoint import snapshot

        ref = ray.put(snapshot(model))
        ray.get([w.load.remote(ref) for w in self.workers])

    def close(self) -> None:
        import ray

        for w in self.workers:
            ray.kill(w)
        if self._owns_ray:
            ray.shutdown()
