"""This process's place among data-parallel trainers, and the few collectives the loop needs.

One process is rank 0 of 1 and every collective is a no-op there, so the loop reads the same either way.
Under `torchrun` (WORLD_SIZE > 1) `join_process_group` joins the group torchrun set up: gloo for CPU
tensors, NCCL for CUDA ones.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recorder.errors import InputError
from trainer.errors import TrainerError

if TYPE_CHECKING:
    import torch


class DistributedError(TrainerError, InputError):
    """A data-parallel launch this trainer cannot run (a setting it does not support, too few prompts)."""


@dataclass(frozen=True)
class Ranks:
    """Rank `rank` of `world_size` trainers; each samples and trains on its share of every global batch."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0: records the run's events and writes its checkpoints."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def share(self, n: int) -> range:
        """This rank's contiguous block of `n` prompts: whole prompts, so a GRPO group stays on one rank,
        and the ranks' blocks in rank order are the single process's batch."""
        return range(n * self.rank // self.world_size, n * (self.rank + 1) // self.world_size)

    def sum(self, values: list[float]) -> list[float]:
        """Each value summed over the ranks (float64, one all-reduce)."""
        if not self.distributed:
            return values
        import torch
        import torch.distributed as dist

        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t)
        return [float(v) for v in t.tolist()]

    def barrier(self) -> None:
        if self.distributed:
            import torch.distributed as dist

            dist.barrier()

    def broadcast(self, obj: Any) -> Any:
        """Rank 0's `obj` on every rank (picklable objects only)."""
        if not self.distributed:
            return obj
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def broadcast_weights(self, model: torch.nn.Module) -> None:
        """Rank 0's weights into every rank's copy of `model` (before sharding: the init is rank 0's)."""
        if not self.distributed:
            return
        import torch
        import torch.distributed as dist

        with torch.no_grad():
            for tensor in model.state_dict().values():
                dist.broadcast(tensor, src=0)


def launched_ranks() -> Ranks:
    """The ranks torchrun's environment describes (rank 0 of 1 without it)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Ranks()
    return Ranks(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))


def join_process_group(ranks: Ranks) -> None:
    """Join torchrun's process group (gloo for CPU tensors, NCCL for CUDA ones) if not joined yet."""
    import torch
    import torch.distributed as dist

    if ranks.distributed and not dist.is_initialized():
        dist.init_process_group(backend="cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


def leave_process_group() -> None:
    """Leave torchrun's process group if this rank joined it. Nothing is imported here: a Ctrl-C that cut
    torch's own import short leaves a half-loaded torch, and no group to leave."""
    dist = sys.modules.get("torch.distributed")
    is_initialized = getattr(dist, "is_initialized", None)
    if dist is not None and is_initialized is not None and is_initialized():
        dist.destroy_process_group()
