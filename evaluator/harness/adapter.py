"""The lm-eval model adapter: a checkpoint the evaluator loaded (after its integrity checks) as an `LM`.

lm-eval asks for log-likelihoods and generations; the maths is in loglik.py. The adapter holds nothing but
the loaded model, its tokenizer and the batch size, so the scores depend only on the weights and the data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lm_eval.api.model import LM

from evaluator.harness import loglik

# (method name in loglik.METHODS, requests, batch size) -> one result per request, in request order
Compute = Callable[[str, list[Any], int], list[Any]]


class CheckpointLM(LM):  # type: ignore[misc]
    """A loaded checkpoint behind lm-eval's model interface. `compute` runs on the evaluator's workers (in
    this process, or Ray actors each holding the checkpoint); `local` builds one around a model in hand."""

    def __init__(self, compute: Compute, *, batch_size: int, on_task: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.compute = compute
        self.batch_size = batch_size
        self.on_task = on_task  # told each task's name as its requests start (then they run task by task)

    @classmethod
    def local(
        cls, model: Any, tokenizer: Any, *, batch_size: int, on_task: Callable[[str], None] | None = None
    ) -> CheckpointLM:
        def compute(name: str, requests: list[Any], size: int) -> list[Any]:
            return list(loglik.METHODS[name](model, tokenizer, requests, batch_size=size))

        return cls(compute, batch_size=batch_size, on_task=on_task)

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        pairs = [(str(r.args[0]), str(r.args[1])) for r in requests]
        if self.on_task is not None:
            return self._by_task("loglikelihood", requests, pairs)
        return self.compute("loglikelihood", pairs, self.batch_size)

    def _by_task(self, method: str, requests: list[Any], items: list[Any]) -> list[Any]:
        """Each task's requests in turn, its name told first; the results in request order. A request's
        result does not depend on the others in its batch, so the grouping changes no score."""
        assert self.on_task is not None
        out: list[Any] = [None] * len(requests)
        for task in dict.fromkeys(str(r.task_name) for r in requests):
            where = [i for i, r in enumerate(requests) if str(r.task_name) == task]
            self.on_task(task)
            for i, value in zip(where, self.compute(method, [items[i] for i in where], self.batch_size), strict=True):
                out[i] = value
        return out

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        return self.compute("loglikelihood_rolling", [str(r.args[0]) for r in requests], self.batch_size)

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        todo = []
        for r in requests:
            context, kwargs = r.args[0], dict(r.args[1] or {})
            stops = kwargs.get("until") or []
            todo.append(
                (str(context), [stops] if isinstance(stops, str) else list(stops), int(kwargs.get("max_gen_toks", 256)))
            )
        return self.compute("generate_until", todo, self.batch_size)
