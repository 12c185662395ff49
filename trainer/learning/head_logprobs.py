"""log p(target) straight from the last hidden states: the LM head and the log-softmax fused, in chunks.

The plain path materialises the logits [N, V] (200 MB for a micro-batch of 16 x 64 tokens at V = 49152),
then, in the backward, the softmax, the gather's zero-filled gradient and their sum, each as large: memory
that grows with the vocabulary, and on the CPU fresh pages from the OS every micro-batch (2.2 GB of page
faults a micro-batch at the bench's shapes, 0.5 GB fused). Here one [C, V] buffer is reused for every chunk
of C positions, forward and backward, and only the per-position logsumexp [N] is kept for the backward,
which recomputes each chunk's logits (a third more head matmul), as fused linear-cross-entropy kernels do.
On the CPU the two cost the same time (bench/README.md); the memory is what this saves. Exact: the same
arithmetic as `logits.log_softmax(-1).gather(...)`, up to summation order.

When the caller knows the incoming gradient before the forward (GRPO's first mini-batch: its ratio is 1
whatever the log-probs, trainer/learning/update.py), the forward computes the input gradients too, from the logits it
has just made, and the backward returns them once it has checked that the gradient it was given is that one
(else it recomputes as above). Three head matmuls instead of four, with the same arithmetic, so the same bits:
the update of a bench step is about 3.7 s (a tenth) shorter on the CPU (bench/README.md).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

CHUNK = 128  # positions per chunk: a [128, 49152] float32 buffer is 25 MB


def head_logprobs(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, grad_hint: torch.Tensor | None = None
) -> torch.Tensor:
    """hidden [..., H], head weight [V, H], targets [...] -> log p(target) [...] in float32.

    `grad_hint` [...]: the gradient the backward will bring, when the caller knows it before the forward (GRPO's
    first mini-batch, whose ratio is 1 whatever the log-probs). The forward then also computes the gradients
    from the chunk's logits while it has them, and the backward, given exactly that gradient, returns them:
    one head matmul fewer (three, not four) and no logits recomputed. Given another gradient, it recomputes."""
    import torch

    shape = targets.shape
    # Without gradients (log-probs to compare against) the early gradients would be wasted work.
    hint = None if grad_hint is None or not torch.is_grad_enabled() else grad_hint.reshape(-1)
    flat = _function().apply(hidden.reshape(-1, hidden.shape[-1]), weight, targets.reshape(-1), hint)
    return flat.view(shape)  # type: ignore[no-any-return]


def _chunk_logits(hidden: torch.Tensor, weight: torch.Tensor, buf: torch.Tensor) -> torch.Tensor:
    """hidden [c, H] @ weight.T into buf [c, V] (float32, whatever the weights' dtype)."""
    import torch

    if weight.dtype == torch.float32:
        return torch.mm(hidden, weight.t(), out=buf)
    return buf.copy_(torch.mm(hidden, weight.t()))


class _Gradients:
    """The head's input gradients accumulated chunk by chunk: the backward's arithmetic, shared by the
    backward and by a forward that was given the gradient in advance (so both give the same bits)."""

    def __init__(self, hidden: torch.Tensor, weight: torch.Tensor, need_h: bool, need_w: bool) -> None:
        import torch

        self.hidden, self.weight = hidden, weight
        self.h = torch.empty_like(hidden) if need_h else None
        self.w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if need_w else None

    def add(
        self, s: int, e: int, logits: torch.Tensor, lse: torch.Tensor, targets: torch.Tensor, grad: torch.Tensor
    ) -> None:
        """Chunk s:e: its logits [c, V] (overwritten), logsumexp [c], targets [c], incoming gradient [c]."""
        import torch

        g = grad[:, None]  # [c, 1]
        # d(picked - lse)/d logits = onehot(target) - softmax: scaled by the incoming gradient
        dlogits = logits.sub_(lse[:, None]).exp_().mul_(-g)
        dlogits.scatter_add_(1, targets[:, None], g)
        d = dlogits if self.weight.dtype == torch.float32 else dlogits.to(self.weight.dtype)
        if self.h is not None:
            torch.mm(d, self.weight, out=self.h[s:e])
        if self.w is not None:
            self.w.addmm_(dlogits.t(), self.hidden[s:e].float())  # float32 accumulation whatever the dtype

    def result(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        return self.h, None if self.w is None else self.w.to(self.weight.dtype)


@functools.cache
def _function() -> Any:
    """The autograd Function, built on first use: importing this module does not import torch."""
    import torch

    class HeadLogprobs(torch.autograd.Function):
        @staticmethod
        def forward(
            ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, hint: torch.Tensor | None
        ) -> torch.Tensor:
            n = hidden.shape[0]
            buf = torch.empty((min(CHUNK, n), weight.shape[0]), dtype=torch.float32, device=hidden.device)
            picked = torch.empty(n, dtype=torch.float32, device=hidden.device)
            lse = torch.empty(n, dtype=torch.float32, device=hidden.device)
            needs = ctx.needs_input_grad[:2]
            early = None if hint is None or not any(needs) else _Gradients(hidden, weight, *needs)
            scratch = None if early is None else torch.empty_like(buf)
            for s in range(0, n, CHUNK):
                e = min(n, s + CHUNK)
                logits = _chunk_logits(hidden[s:e], weight, buf[: e - s])  # [c, V]
                picked[s:e] = logits.gather(1, targets[s:e, None]).squeeze(1)
                top = logits.amax(dim=1, keepdim=True)  # [c, 1]
                if early is None or scratch is None:
                    shifted = logits.sub_(top)  # in place: no [c, V] copies
                else:  # the logits stay for the gradients
                    shifted = torch.sub(logits, top, out=scratch[: e - s])
                lse[s:e] = top.squeeze(1) + shifted.exp_().sum(dim=1).log()
                if early is not None and hint is not None:
                    early.add(s, e, logits, lse[s:e], targets[s:e], hint[s:e].float())
            ctx.save_for_backward(hidden, weight, targets, lse, hint)
            ctx.early = early
            return picked - lse

        @staticmethod
        def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
            hidden, weight, targets, lse, hint = ctx.saved_tensors
            early, ctx.early = ctx.early, None
            if early is not None and torch.equal(grad, hint):
                return *early.result(), None, None
            n = hidden.shape[0]
            grads = _Gradients(hidden, weight, *ctx.needs_input_grad[:2])
            buf = torch.empty((min(CHUNK, n), weight.shape[0]), dtype=torch.float32, device=hidden.device)
            grad = grad.float()
            for s in range(0, n, CHUNK):
                e = min(n, s + CHUNK)
                grads.add(s, e, _chunk_logits(hidden[s:e], weight, buf[: e - s]), lse[s:e], targets[s:e], grad[s:e])
            return *grads.result(), None, None

    return HeadLogprobs


# Config fields with which a transformers model changes its logits after the head (Gemma's soft-capping,
# Cohere's and Granite's scales): such a model's logits are not hidden @ W.T, and it takes the plain path.
_LOGIT_TRANSFORMS = {"final_logit_softcapping": None, "logit_scale": 1.0, "logits_scaling": 1.0}


def fused_head_weight(model: Any) -> torch.Tensor | None:
    """The LM head's weight [V, H] when the model's logits are exactly `base_model(...) @ weight.T` (a
    transformers causal LM with a bias-free linear head), so that the head can be fused with the
    log-softmax; None otherwise, and under FSDP, whose sharded weights are gathered only inside the modules'
    own forwards."""
    import torch

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    base = getattr(model, "base_model", model)
    if type(head) is not torch.nn.Linear or head.bias is not None or base is model:
        return None
    config = getattr(model, "config", None)
    if any(getattr(config, name, plain) not in (plain, None) for name, plain in _LOGIT_TRANSFORMS.items()):
        return None
    weight = head.weight
    return None if hasattr(weight, "full_tensor") else weight  # a DTensor: sharded by FSDP
