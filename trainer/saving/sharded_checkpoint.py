"""Sharded checkpoints (`checkpoint.format=dcp`, the default under torchrun): every rank writes its own shard
of the weights through torch DCP, hashing it as it writes (recorder.checkpoints.torch_dcp.dcp_write), and rank 0
commits the manifest of all shards once the directory is in place.

The save is synchronous: DCP's planning and the gathering of the digests are collectives on the training
process group, which must not run beside the training step's own. `blocked_ns` is therefore the whole
save, fingerprint included, as the loop measured it; the weight-update time is the caller's, as for the
consolidated checkpoint (trainer/saving/checkpoint.py).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recorder.checkpoints.fingerprint import fingerprint_record
from recorder.checkpoints.recorder_format import step_dirname
from recorder.checkpoints.torch_dcp.dcp_write import write_dcp_checkpoint
from trainer.policy.tokenizer import Tokenizer
from trainer.saving.checkpoint import SavedCheckpoint


class ShardedCheckpointWriter:
    """Writes this rank's shard of each checkpoint; on rank 0, `on_commit` runs once every shard is durable.

    `full_model` gives rank 0 the whole model of the step being saved, to fingerprint (data parallel: the
    unsharded copy the refit gathered; one process: the model itself).
    """

    def __init__(
        self,
        checkpoints_dir: Path,
        full_model: Callable[[], Any],
        tokenizer: Tokenizer,
        *,
        on_commit: Callable[[SavedCheckpoint], None],
        distributed: bool,
        is_main: bool,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.dir = Path(checkpoints_dir)
        self.full_model = full_model
        self.tokenizer = tokenizer
        self.config_json = full_model().config.to_json_string()
        self.tokenizer_json = tokenizer.to_json()
        self.files = {
            "config.json": hashlib.sha256(self.config_json.encode()).hexdigest(),
            "tokenizer.json": hashlib.sha256(self.tokenizer_json.encode()).hexdigest(),
        }
        self.on_commit, self.distributed, self.is_main, self.clock = on_commit, distributed, is_main, clock
        self.committed: list[SavedCheckpoint] = []

    def save(self, model: Any, *, step: int, weight_update_ns: int) -> int:
        """Write this rank's shard of `model` (FSDP2: its local shards) as step `step`; -> ns blocked."""
        begin = self.clock()
        state = model.state_dict()
        manifest = write_dcp_checkpoint(
            self.dir / step_dirname(step),
            state,
            config_json=self.config_json,
            tokenizer_json=self.tokenizer_json,
            step=step,
            distributed=self.distributed,
        )
        if not self.is_main or manifest is None:
            return self.clock() - begin
        fp = fingerprint_record(self.full_model(), self.tokenizer)
        end = self.clock()
        saved = SavedCheckpoint(
            step=step,
            path=self.dir / step_dirname(step),
            sha256=manifest.root,
            bytes=manifest.bytes,
            weight_update_ns=weight_update_ns,
            save_begin_ns=begin,
            save_end_ns=end,
            blocked_ns=end - begin,
            fingerprint=fp,
            dtype=str(next(iter(state.values())).dtype).removeprefix("torch."),
            files=dict(self.files),
            manifest=manifest.to_dict(),
        )
        self.committed.append(saved)
        self.on_commit(saved)
        return end - begin

    def check(self) -> None:
        """Nothing runs in the background: a failed save raised where it happened."""

    def drain(self) -> None:
        """Every save is complete when `save` returns."""

    def close(self) -> None:
        """Every save is complete when `save` returns."""
