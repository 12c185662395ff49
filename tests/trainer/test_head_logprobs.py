"""The LM head fused with the log-softmax (trainer/learning/head_logprobs.py): the plain path's values and gradients
without its [N, V] tensors, and only for models whose logits are hidden @ W.T."""

import pytest
import torch

from trainer.learning.grpo import token_logprobs
from trainer.learning.head_logprobs import CHUNK, fused_head_weight, head_logprobs
from trainer.policy.model import ModelConfig, build_model


def _plain_and_fused(dtype, rows, needs=(True, True)):
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(rows, 24, generator=g).to(dtype).requires_grad_(needs[0])
    weight = (torch.randn(300, 24, generator=g) * 0.5).to(dtype).requires_grad_(needs[1])
    targets = torch.randint(0, 300, (rows,), generator=g)
    upstream = torch.randn(rows, generator=g)  # a different weight per position, as the GRPO loss gives
    out = {}
    for name in ("plain", "fused"):
        hidden.grad = weight.grad = None
        if name == "plain":
            logp = token_logprobs((hidden @ weight.t())[None], targets[None])[0]
        else:
            logp = head_logprobs(hidden, weight, targets)
        (logp * upstream).sum().backward()
        grads = [t.grad.clone() if t.grad is not None else None for t in (hidden, weight)]
        out[name] = (logp.detach(), *grads)
    return out


@pytest.mark.parametrize("rows", [5, 2 * CHUNK + 7], ids=["one-chunk", "ragged-chunks"])
def test_same_logprobs_and_gradients_as_the_plain_head_in_float32(rows):
    out = _plain_and_fused(torch.float32, rows)
    for plain, fused in zip(out["plain"], out["fused"], strict=True):
        assert fused.dtype == plain.dtype
        torch.testing.assert_close(fused, plain, rtol=1e-5, atol=1e-5)


def test_bfloat16_weights_give_float32_logprobs_close_to_the_plain_head():
    out = _plain_and_fused(torch.bfloat16, CHUNK + 3)
    logp, grad_h, grad_w = out["fused"]
    assert logp.dtype == torch.float32 and grad_h.dtype == grad_w.dtype == torch.bfloat16
    torch.testing.assert_close(logp, out["plain"][0], rtol=0, atol=2e-2)
    # Within two bfloat16 steps: the fused head accumulates the weight's gradient in float32, the plain path
    # in bfloat16.
    torch.testing.assert_close(grad_w.float(), out["plain"][2].float(), rtol=2 * 2**-7, atol=2e-2)


def test_a_frozen_head_or_frozen_states_get_no_gradient():
    assert _plain_and_fused(torch.float32, 9, needs=(True, False))["fused"][2] is None
    fused = _plain_and_fused(torch.float32, 9, needs=(False, True))["fused"]
    assert fused[1] is None and fused[2] is not None


def test_only_a_plain_linear_head_is_fused():
    model = build_model(ModelConfig())
    assert fused_head_weight(model) is model.lm_head.weight
    model.config.final_logit_softcapping = 30.0  # Gemma-style: logits are 30 * tanh(h @ W.T / 30)
    assert fused_head_weight(model) is None
    model.config.final_logit_softcapping = None
    model.lm_head.bias = torch.nn.Parameter(torch.zeros(model.lm_head.out_features))
    assert fused_head_weight(model) is None
    assert fused_head_weight(torch.nn.Linear(4, 4)) is None  # not a causal LM: no base model to run


def _fused_with_hint(dtype, rows, hint_scale, needs=(True, True)):
    """The fused head's log-probs and gradients, told in advance that `hint_scale * upstream` comes back
    (None: told nothing), when `upstream` does."""
    g = torch.Generator().manual_seed(1)
    hidden = torch.randn(rows, 24, generator=g).to(dtype).requires_grad_(needs[0])
    weight = (torch.randn(300, 24, generator=g) * 0.5).to(dtype).requires_grad_(needs[1])
    targets = torch.randint(0, 300, (rows,), generator=g)
    upstream = torch.randn(rows, generator=g)
    hint = None if hint_scale is None else upstream * hint_scale
    logp = head_logprobs(hidden, weight, targets, grad_hint=hint)
    logp.backward(upstream)
    return logp.detach(), hidden.grad, weight.grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [5, 2 * CHUNK + 7], ids=["one-chunk", "ragged-chunks"])
def test_a_gradient_known_in_advance_gives_the_same_bits(rows, dtype):
    told, untold = _fused_with_hint(dtype, rows, 1.0), _fused_with_hint(dtype, rows, None)
    for a, b in zip(told, untold, strict=True):
        assert a.dtype == b.dtype and torch.equal(a, b)


def test_a_wrong_hint_is_noticed_and_the_gradients_recomputed():
    wrong, untold = _fused_with_hint(torch.float32, CHUNK + 3, 2.0), _fused_with_hint(torch.float32, CHUNK + 3, None)
    for a, b in zip(wrong, untold, strict=True):
        assert torch.equal(a, b)


def test_a_hint_for_a_frozen_head_gives_it_no_gradient():
    _, grad_h, grad_w = _fused_with_hint(torch.float32, 9, 1.0, needs=(True, False))
    assert grad_h is not None and grad_w is None
