"""Each distinct prompt through the model once: the same log-probs and the same gradient as whole sequences,
in the update (trainer/learning/shared_prompt.py) and in the sampler's prefill (trainer/policy/sampling.py)."""

import pytest
import torch

from trainer.learning.grpo import build_batch, token_logprobs
from trainer.learning.shared_prompt import completion_logprobs
from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.policy.sampling import generate, sample_seed


@pytest.fixture(scope="module")
def model():
    return build_model(ModelConfig(max_position_embeddings=64))


def _groups(prompt_lengths: list[int], group: int, seed: int = 0):
    """Right-padded sequences: each prompt (ids of the tiny vocabulary, <bos> = 1 first) with `group` completions of
    different lengths."""
    g = torch.Generator().manual_seed(seed)
    prompts, completions = [], []
    for n in prompt_lengths:
        prompt = [1, *torch.randint(3, 19, (n - 1,), generator=g).tolist()]
        for _ in range(group):
            length = int(torch.randint(2, 9, (1,), generator=g))
            prompts.append(prompt)
            completions.append(torch.randint(3, 19, (length,), generator=g).tolist())
    return build_batch(prompts, completions, pad_id=0)


def _loss_and_grads(model, logp, batch):
    model.zero_grad(set_to_none=True)
    weights = torch.linspace(-1.0, 1.0, len(batch.inputs))[:, None]  # a different advantage per row
    (logp * batch.mask * weights).sum().backward()
    return {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("prompt_lengths", [[6, 6, 6], [4, 9, 6]], ids=["same-length", "mixed-lengths"])
def test_same_logprobs_and_gradient_as_whole_sequences(model, prompt_lengths):
    batch = _groups(prompt_lengths, group=4)
    whole = token_logprobs(model(input_ids=batch.inputs).logits, batch.targets)
    whole_grads = _loss_and_grads(model, whole, batch)
    shared = completion_logprobs(model, batch)
    shared_grads = _loss_and_grads(model, shared, batch)
    assert shared.shape == whole.shape
    torch.testing.assert_close(shared * batch.mask, whole.detach() * batch.mask, rtol=0, atol=1e-5)
    for name, grad in whole_grads.items():  # equal up to float rounding: another order of the same sums
        scale = float(grad.abs().max())
        torch.testing.assert_close(shared_grads[name], grad, rtol=0, atol=1e-5 * scale + 1e-9, msg=name)
    assert any(g.abs().sum() > 0 for g in whole_grads.values())  # the comparison is not of zeros


def test_distinct_prompts_take_the_whole_sequence_path(model):
    batch = _groups([5, 7, 6], group=1)
    torch.testing.assert_close(
        completion_logprobs(model, batch), token_logprobs(model(input_ids=batch.inputs).logits, batch.targets)
    )


def test_prefilling_a_shared_prompt_once_samples_what_each_row_alone_samples(model):
    tok = build_tokenizer(ModelConfig())
    prompts = ["12+7=", "12+7=", "3+45=", "12+7=", "3+45=", "8+8="]
    seeds = [sample_seed(0, i) for i in range(len(prompts))]
    kw = dict(temperature=1.0, top_p=1.0, max_new_tokens=6)
    together = generate(model, tok, prompts, seeds=seeds, **kw)
    alone = [generate(model, tok, [p], seeds=[s], **kw)[0] for p, s in zip(prompts, seeds, strict=True)]
    assert together == alone
    assert len(set(together[:2] + together[3:4])) > 1  # one prompt, different seeds: not vacuous


@pytest.mark.parametrize("prompt_lengths", [[6, 6, 6], [4, 9, 6]], ids=["same-length", "mixed-lengths"])
def test_a_gradient_known_in_advance_reaches_every_position_it_belongs_to(model, prompt_lengths, monkeypatch):
    """The hint is laid out like the gradients the assembly of first and later positions sends back: every
    head call finds its gradient equal to its hint, and the gradients are the same bits as without one."""
    import trainer.learning.head_logprobs as head

    batch = _groups(prompt_lengths, group=4)
    weights = torch.linspace(-1.0, 1.0, len(batch.inputs))[:, None]
    plain = _loss_and_grads(model, completion_logprobs(model, batch), batch)
    recomputed = []
    backward = head._function().backward

    def counting(ctx, grad):
        recomputed.append(ctx.early is None or not torch.equal(grad, ctx.saved_tensors[4]))
        return backward(ctx, grad)

    monkeypatch.setattr(head._function(), "backward", staticmethod(counting))
    told = _loss_and_grads(model, completion_logprobs(model, batch, grad_hint=batch.mask * weights), batch)
    assert recomputed == [False, False]  # the first completion position and the later ones
    assert all(torch.equal(told[name], grad) for name, grad in plain.items())
