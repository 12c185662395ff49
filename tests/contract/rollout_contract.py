"""The contract every rollout backend keeps (trainer/rollout.py's `Rollout`), as one abstract test class.

A backend's subclass says how to start it on a model (`start`) and which sampling it reproduces (`sampling`:
seeded sampling for the torch family, greedy for vLLM, whose sampler is its own) and, where the backend
needs one, its model's shape (`model_config`). The class checks:

- its completions are the in-process sampler's (`TorchRollout`) on the same weights, bit for bit;
- the same (prompt, seed) pairs give the same completions whatever the batches they are sent in;
- after the weights change, `refit` makes it follow them (and the completions really change);
- the completions depend on the seeds (so that equality above is evidence, not a constant).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

torch = pytest.importorskip("torch")

from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.policy.sampling import sample_seed
from trainer.policy.task import validation_tasks
from trainer.rollout import Rollout, TorchRollout

SMALL = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)
N = 24
SEEDED = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 4}
GREEDY = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 4}


class RolloutContract:
    """Subclass with `start(model, tokenizer)`; `sampling` is what the backend reproduces."""

    sampling: ClassVar[dict[str, Any]] = SEEDED
    model_config: ClassVar[ModelConfig] = SMALL

    def start(self, model: Any, tokenizer: Any) -> Rollout:
        raise NotImplementedError

    @pytest.fixture(scope="class")
    def backend(self) -> Iterator[tuple[Rollout, Any, Any]]:
        torch.manual_seed(0)
        model, tokenizer = build_model(self.model_config).eval(), build_tokenizer(self.model_config)
        rollout = self.start(model, tokenizer)
        try:
            yield rollout, model, tokenizer
        finally:
            rollout.close()

    @staticmethod
    def _pairs() -> tuple[list[str], list[int]]:
        prompts = [t.prompt for t in validation_tasks()[:N]]
        return prompts, [sample_seed("contract", i) for i in range(N)]

    def _reference(self, model: Any, tokenizer: Any) -> list[list[int]]:
        prompts, seeds = self._pairs()
        return TorchRollout(model, tokenizer).generate(prompts, seeds, **self.sampling)

    def test_completions_are_the_in_process_samplers(self, backend: tuple[Rollout, Any, Any]) -> None:
        rollout, model, tokenizer = backend
        prompts, seeds = self._pairs()
        assert rollout.generate(prompts, seeds, **self.sampling) == self._reference(model, tokenizer)

    @pytest.mark.parametrize("sizes", [(1,) * 5 + (N - 5,), (7, 7, 7, 3), (N,)])
    def test_batches_do_not_change_a_completion(self, backend: tuple[Rollout, Any, Any], sizes: tuple[int]) -> None:
        rollout, model, tokenizer = backend
        prompts, seeds = self._pairs()
        out, start = [], 0
        for size in sizes:
            out += rollout.generate(prompts[start : start + size], seeds[start : start + size], **self.sampling)
            start += size
        assert out == self._reference(model, tokenizer)

    def test_completions_depend_on_the_seeds_or_prompts(self, backend: tuple[Rollout, Any, Any]) -> None:
        rollout, _, _ = backend
        prompts, seeds = self._pairs()
        out = rollout.generate(prompts, seeds, **self.sampling)
        assert len({tuple(ids) for ids in out}) > N // 4

    def test_refit_follows_the_new_weights(self, backend: tuple[Rollout, Any, Any]) -> None:
        rollout, model, tokenizer = backend
        prompts, seeds = self._pairs()
        before = rollout.generate(prompts, seeds, **self.sampling)
        saved = {k: v.clone() for k, v in model.state_dict().items()}
        try:
            with torch.no_grad():
                for p in model.parameters():
                    p.mul_(1.5)
            rollout.refit(model)
            after = rollout.generate(prompts, seeds, **self.sampling)
            assert after == self._reference(model, tokenizer) and after != before
        finally:
            model.load_state_dict(saved)
            rollout.refit(model)
