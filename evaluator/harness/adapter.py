"""The lm-eval model adapter: a checkpoint the evaluator loaded (after its integrity checks) as an `LM`.

lm-eval asks for log-likelihoods and generations; the maths is in loglik.py. The adapter holds nothing but
the loaded model, its tokenizer and the batch size, so the scores depend only on the weights and the data.
"""

from __future__ import annotations

from typing import Any

from lm_eval.api.model import LM

from evaluator.harness import loglik


class CheckpointLM(LM):  # type: ignore[misc]
    """A loaded checkpoint (transformers causal LM + our tokenizer) behind lm-eval's model interface."""

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        pairs = [(str(r.args[0]), str(r.args[1])) for r in requests]
        return loglik.loglikelihoods(self.model, self.tokenizer, pairs, batch_size=self.batch_size)

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        return loglik.rolling_loglikelihoods(self.model, self.tokenizer, [str(r.args[0]) for r in requests],
                                             batch_size=self.batch_size)

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        contexts, until, budgets = [], [], []
        for r in requests:
            context, kwargs = r.args[0], dict(r.args[1] or {})
            stops = kwargs.get("until") or []
            until.append([stops] if isinstance(stops, str) else list(stops))
            budgets.append(int(kwargs.get("max_gen_toks", 256)))
            contexts.append(str(context))
        return loglik.generate_until(self.model, self.tokenizer, contexts, until, budgets,
                                     batch_size=self.batch_size)
