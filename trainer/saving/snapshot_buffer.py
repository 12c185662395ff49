"""Host memory for checkpoint snapshots: one allocation, made once, reused by every save.

A save copies the weights into a free slot of the buffer and the background writer serializes from there,
so a step's save allocates nothing (a per-tensor `.to("cpu")` allocated the model's size again at every
save). On a GPU the buffer is pinned (page-locked), so the device-to-host copies are asynchronous DMA: they
are all queued with `non_blocking=True` and waited for once, on one event, instead of once per tensor. On a
CPU-only machine the buffer is ordinary memory (pinning needs CUDA).

Slots: a save holds its slot until its write is done, so an asynchronous writer needs one per snapshot that
can be alive at once (queued writes plus the one being written); a slot is taken before copying and the
caller blocks while none is free, which is the back-pressure the writer already applies.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import Any

ALIGN = 64  # bytes: every tensor starts on a cache line, so a view of any dtype is aligned


@dataclass(frozen=True)
class TensorPlace:
    offset: int  # bytes from the start of a slot
    shape: tuple[int, ...]
    dtype: Any  # torch.dtype
    nbytes: int


@dataclass(frozen=True)
class Snapshot:
    """The weights at one step: `tensors` are views into slot `slot` of the buffer, valid until released."""

    slot: int
    tensors: dict[str, Any]


class SnapshotBuffer:
    """`slots` snapshots of `model`'s state dict in one host allocation (pinned when the weights are on CUDA)."""

    def __init__(self, model: Any, slots: int) -> None:
        import torch

        state = model.state_dict()
        self.places: dict[str, TensorPlace] = {}
        size = 0
        for name, t in state.items():
            nbytes = t.numel() * t.element_size()
            self.places[name] = TensorPlace(size, tuple(t.shape), t.dtype, nbytes)
            size += -(-nbytes // ALIGN) * ALIGN
        self.slot_bytes = size
        self.pinned = any(t.is_cuda for t in state.values()) and torch.cuda.is_available()
        self.memory = torch.empty(slots * size, dtype=torch.uint8, pin_memory=self.pinned)
        self._views = [self._slot_views(i) for i in range(slots)]
        self._free: queue.Queue[int] = queue.Queue()
        for i in range(slots):
            self._free.put(i)

    def _slot_views(self, slot: int) -> dict[str, Any]:
        base = slot * self.slot_bytes
        return {
            name: self.memory[base + p.offset : base + p.offset + p.nbytes].view(p.dtype).view(p.shape)
            for name, p in self.places.items()
        }

    def take(self, model: Any) -> Snapshot:
        """Copy the model's current weights into a free slot (waiting for one). Later optimizer steps cannot
        change what it holds."""
        import torch

        slot = self._free.get()
        views = self._views[slot]
        state = model.state_dict()
        if state.keys() != views.keys():
            self._free.put(slot)
            raise ValueError(
                f"the weights' names changed since the buffer was laid out: {sorted(state.keys() ^ views.keys())}"
            )
        for name, t in state.items():
            views[name].copy_(t.detach(), non_blocking=self.pinned)
        if self.pinned:  # one wait for every queued copy, not one per tensor
            done = torch.cuda.Event()
            done.record()
            done.synchronize()
        return Snapshot(slot, views)

    def release(self, snapshot: Snapshot) -> None:
        """The slot's bytes are written out: it may be filled again."""
        self._free.put(snapshot.slot)
