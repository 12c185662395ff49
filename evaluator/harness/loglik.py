"""The maths behind the adapter: sum log-likelihood of a continuation given a context, batched; greedy
generation up to stop strings. Pure functions of (model, tokenizer, requests); torch imported lazily.

Scores must not depend on the batch size: each request is scored on its own row (right padding, causal
attention: padding never precedes a scored token) and summed in float64, and the result is returned in
request order. tests/harness/test_adapter.py checks that batch sizes 1 and 5 give the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evaluator.harness.model_call import logits as model_logits
from evaluator.harness.model_call import max_length
from trainer.policy.tokenizer import CharTokenizer, Tokenizer


class LossyCharTokenizer:
    """The tiny model's CharTokenizer, made total: a character outside its alphabet becomes
    alphabet[ord(c) % len(alphabet)]. The tiny model cannot read English anyway (its scores are at chance);
    the mapping keeps the harness path runnable on it, and different texts still encode differently."""

    def __init__(self, inner: CharTokenizer) -> None:
        self.inner = inner
        self.vocab_size, self.bos_id, self.eos_id, self.pad_id = (
            inner.vocab_size,
            inner.bos_id,
            inner.eos_id,
            inner.pad_id,
        )

    def encode(self, text: str) -> list[int]:
        chars = self.inner.chars
        return self.inner.encode("".join(c if c in chars else chars[ord(c) % len(chars)] for c in text))

    def decode(self, ids: list[int]) -> str:
        return self.inner.decode(ids)

    def to_json(self) -> str:
        return self.inner.to_json()


def readable(tokenizer: Tokenizer) -> Tokenizer:
    """A tokenizer that accepts any text (see LossyCharTokenizer); pretrained tokenizers already do."""
    return LossyCharTokenizer(tokenizer) if isinstance(tokenizer, CharTokenizer) else tokenizer


def encoding_note(char_tokenizer: bool) -> str:
    """For results.json: how text became tokens."""
    if char_tokenizer:
        return "char tokenizer with <bos> prefix; characters outside its alphabet mapped to alphabet[ord(c) % n]"
    return "pretrained tokenizer, no special tokens added (an empty context is prefixed with <eos>)"


@dataclass(frozen=True, slots=True)
class Encoded:
    context: list[int]
    continuation: list[int]


def encode_pair(tokenizer: Tokenizer, context: str, continuation: str) -> Encoded:
    """Token ids of (context, continuation), split as lm-eval's HF model does: trailing spaces of the
    context move to the continuation, and the continuation's ids are the tail of the whole text's ids."""
    spaces = len(context) - len(context.rstrip())
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    tok = readable(tokenizer)
    # a char tokenizer's requests begin with its <bos>, and a declared team's (special_tokens.framed_with_bos)
    framed = isinstance(tok, LossyCharTokenizer) or getattr(tok, "frames_with_bos", False)
    prefix = [tok.bos_id] if framed else []
    ctx = tok.encode(context)
    whole = tok.encode(context + continuation)
    cont = whole[len(ctx) :]
    ctx = prefix + ctx
    if not ctx:
        ctx = [tok.eos_id]
    return Encoded(ctx, cont)


def loglikelihoods(
    model: Any, tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]], *, batch_size: int, limit: int | None = None
) -> list[tuple[float, bool]]:
    """(sum log p(continuation | context), whether greedy decoding reproduces it) per (context, continuation).

    Inputs longer than `limit` (default: the model's positions) keep their last `limit` tokens.
    """
    import torch

    limit = max_length(model) if limit is None else limit
    tok = readable(tokenizer)
    out: list[tuple[float, bool]] = []
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(pairs), batch_size):
                rows = [_window(encode_pair(tok, c, x), limit) for c, x in pairs[start : start + batch_size]]
                out.extend(_score_rows(model, rows, tok.pad_id))
    finally:
        model.train(was_training)
    return out


def _window(e: Encoded, limit: int) -> tuple[list[int], list[int]]:
    """(model input, scored targets): the last limit+1 tokens, the input without its last one."""
    whole = (e.context + e.continuation)[-(limit + 1) :]
    n = min(len(e.continuation), len(whole) - 1)
    return whole[:-1], whole[len(whole) - n :]


def _score_rows(model: Any, rows: list[tuple[list[int], list[int]]], pad_id: int) -> list[tuple[float, bool]]:
    import torch

    width = max(len(inp) for inp, _ in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (inp, _) in enumerate(rows):
        ids[i, : len(inp)] = torch.tensor(inp)
        mask[i, : len(inp)] = 1
    logits = model_logits(model, ids, mask)
    out = []
    for i, (inp, targets) in enumerate(rows):
        n = len(targets)
        if n == 0:
            out.append((0.0, True))
            continue
        logp = torch.log_softmax(logits[i, len(inp) - n : len(inp)].double(), dim=-1)
        want = torch.tensor(targets)
        total = float(logp.gather(-1, want[:, None]).sum())
        out.append((total, bool((logp.argmax(dim=-1) == want).all())))
    return out


def rolling_loglikelihoods(model: Any, tokenizer: Tokenizer, texts: Sequence[str], *, batch_size: int) -> list[float]:
    """Sum log-likelihood of each whole text (perplexity tasks), in disjoint windows of the model's length."""
    import torch
    from lm_eval.utils import get_rolling_token_windows, make_disjoint_window

    tok = readable(tokenizer)
    limit = max_length(model)
    prefix = tok.bos_id if isinstance(tok, LossyCharTokenizer) else tok.eos_id
    out = []
    model.eval()
    with torch.inference_mode():
        for text in texts:
            windows = [
                make_disjoint_window(w)
                for w in get_rolling_token_windows(
                    token_list=tok.encode(text), prefix_token=prefix, max_seq_len=limit, context_len=1
                )
            ]
            rows = [_window(Encoded(list(c), list(x)), limit) for c, x in windows]
            total = 0.0
            for s in range(0, len(rows), batch_size):
                total += sum(v for v, _ in _score_rows(model, rows[s : s + batch_size], tok.pad_id))
            out.append(total)
    return out


def generate_until(
    model: Any, tokenizer: Tokenizer, requests: Sequence[tuple[str, list[str], int]], *, batch_size: int
) -> list[str]:
    """Greedy continuations of (context, stop strings, max new tokens), each cut before its first stop string."""
    from trainer.policy.sampling import generate

    tok = readable(tokenizer)
    out: list[str] = []
    for s in range(0, len(requests), batch_size):
        part = requests[s : s + batch_size]
        budget = max(n for _, _, n in part)
        texts = generate(
            model,
            tok,
            [c for c, _, _ in part],
            temperature=0.0,
            top_p=1.0,
            max_new_tokens=budget,
            seeds=[0] * len(part),
        )
        for (_, until, n), text in zip(part, texts, strict=False):
            text = text[:n] if isinstance(tok, LossyCharTokenizer) else text  # one token per character
            stops = [x for x in until if x]
            cut = min([text.find(x) for x in stops if x in text] or [len(text)])
            out.append(text[:cut])
    return out


# What workers may be asked to compute (Scorer.harness): name -> function of (model, tokenizer, requests).
METHODS: dict[str, Callable[..., Sequence[Any]]] = {
    "loglikelihood": loglikelihoods,
    "loglikelihood_rolling": rolling_loglikelihoods,
    "generate_until": generate_until,
}
