"""The adapter's maths on a small random model: sum log-likelihood of the continuation, independent of
the batch size, equal to a direct unbatched computation; lm-eval's context/continuation split."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("lm_eval")

from evaluator.harness.loglik import (
    LossyCharTokenizer,
    encode_pair,
    generate_until,
    loglikelihoods,
    rolling_loglikelihoods,
)
from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.policy.tokenizer import CharTokenizer

PAIRS = [
    ("1+2=", " 3"),
    ("12+30=", " 42"),
    ("Question: what is 7?\nAnswer:", " seven"),
    ("", "99"),
    ("5*5", "=25"),
    ("a long context " * 5, " and a long continuation of text"),
    ("9-", "1"),
    ("0 ", "0"),
]


@pytest.fixture(scope="module")
def tiny() -> tuple[object, CharTokenizer]:
    cfg = ModelConfig(init_seed=3)
    return build_model(cfg), build_tokenizer(cfg)  # type: ignore[return-value]


def _direct(model: object, tok: CharTokenizer, context: str, continuation: str, limit: int) -> float:
    """log p(continuation | context) one request at a time, no padding, token by token from the logits."""
    e = encode_pair(tok, context, continuation)
    whole = (e.context + e.continuation)[-(limit + 1) :]
    n = min(len(e.continuation), len(whole) - 1)
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([whole[:-1]])).logits[0].double()  # type: ignore[operator]
    logp = torch.log_softmax(logits, dim=-1)
    return sum(float(logp[i, whole[i + 1]]) for i in range(len(whole) - 1 - n, len(whole) - 1))


def test_scores_do_not_depend_on_the_batch_size(tiny: tuple[object, CharTokenizer]) -> None:
    model, tok = tiny
    results = {bs: loglikelihoods(model, tok, PAIRS, batch_size=bs) for bs in (1, 3, 64)}
    for bs in (3, 64):
        for (a, ga), (b, gb) in zip(results[1], results[bs], strict=False):
            assert math.isclose(a, b, rel_tol=0, abs_tol=1e-5) and ga == gb
    assert len({round(v, 3) for v, _ in results[1]}) > 4  # not a constant: different texts, different scores


def test_sum_loglik_matches_a_direct_computation(tiny: tuple[object, CharTokenizer]) -> None:
    model, tok = tiny
    got = loglikelihoods(model, tok, PAIRS, batch_size=4)
    limit = model.config.max_position_embeddings  # type: ignore[attr-defined]
    for (context, continuation), (value, _) in zip(PAIRS, got, strict=False):
        assert value < 0
        assert math.isclose(value, _direct(model, tok, context, continuation, limit), abs_tol=1e-5)


def test_a_longer_continuation_is_less_likely_than_its_prefix(tiny: tuple[object, CharTokenizer]) -> None:
    model, tok = tiny
    [(short, _), (long, _)] = loglikelihoods(model, tok, [("1+1=", "2"), ("1+1=", "22")], batch_size=2)
    assert long < short


def test_trailing_context_space_moves_to_the_continuation() -> None:
    tok = CharTokenizer()
    a = encode_pair(tok, "1+2= ", "3")
    b = encode_pair(tok, "1+2=", " 3")
    assert a == b and a.context == [tok.bos_id, *tok.encode("1+2=")] and a.continuation == tok.encode(" 3")


def test_char_tokenizer_reads_any_text_deterministically() -> None:
    lossy = LossyCharTokenizer(CharTokenizer())
    assert lossy.encode("1+2") == CharTokenizer().encode("1+2")
    assert lossy.encode("Paris!") == lossy.encode("Paris!") != lossy.encode("Tokyo!")


def test_rolling_loglik_of_a_text_is_its_sum_from_the_start(tiny: tuple[object, CharTokenizer]) -> None:
    model, tok = tiny
    [rolled] = rolling_loglikelihoods(model, tok, ["12+30=42"], batch_size=2)
    [(direct, _)] = loglikelihoods(model, tok, [("", "12+30=42")], batch_size=1)
    # the empty context is <bos> for the char tokenizer, as the rolling windows' prefix is
    assert math.isclose(rolled, direct, abs_tol=1e-5)


def test_generate_until_cuts_at_the_first_stop_string(tiny: tuple[object, CharTokenizer]) -> None:
    model, tok = tiny
    free = generate_until(model, tok, [("1+2=", [], 12)], batch_size=1)[0]
    assert len(free) <= 12
    if len(free) > 1:
        stop = free[1]
        cut = generate_until(model, tok, [("1+2=", [stop], 12), ("1+2=", [], 3)], batch_size=2)
        assert cut == [free[: free.index(stop)], free[:3]]
