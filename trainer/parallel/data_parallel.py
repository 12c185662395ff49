"""Data-parallel GRPO under `torchrun`: FSDP2 `fully_shard` over the policy, one share of each batch per rank.

- The global batch is the single process's: rank R samples a contiguous block of the step's prompts
  (`Ranks.share`), with the per-sample seeds of (step, global prompt index, sample), so the ranks' samples
  together are exactly one process's. The loss is normalised by the global batch's tokens and the ranks'
  gradients are summed by FSDP's reduce-scatter, so one step is one process's step up to float rounding.
- The init (the cached warm-up included) is rank 0's, broadcast before sharding; then every rank holds one
  shard of the weights, of the gradients and of AdamW's state.
- Rollouts sample with an unsharded copy of the policy, refit after every optimizer step from the full
  weights gathered from the shards (as verl and NeMo-RL refit their rollout engines). Those gathered
  weights are what rank 0 fingerprints. Checkpoints are sharded by default: every rank writes its own
  shard through torch DCP (trainer/saving/sharded_checkpoint.py); `checkpoint.format=safetensors` makes rank 0
  save those gathered weights consolidated, with one process's names and dtypes.
- Rank 0 records the run's events as one process does (`trainer-NNNN`); every rank records its own step in
  its own segment, `trainer-rank<R>-NNNN` (kind `rank_step`). `weight_update` is taken by rank 0 after a
  barrier that every rank enters once its optimizer step is done: the last rank's update.
"""

from __future__ import annotations

import copy
import signal
from pathlib import Path
from typing import Any

from recorder.errors import DataError
from recorder.store.kinds import RankStep
from recorder.store.log import LogWriter
from recorder.store.run import RunDir
from trainer.config import TrainConfig
from trainer.errors import TrainerError
from trainer.loop import GRPOTrainer, StepResult, TrainSummary
from trainer.parallel.distributed import DistributedError, Ranks, join_process_group, leave_process_group
from trainer.policy.kernels import pin_cpu_kernels
from trainer.policy.model import ModelConfig
from trainer.policy.tokenizer import Tokenizer
from trainer.rollout import Rollout, TorchRollout
from trainer.saving.checkpoint import CheckpointWriter
from trainer.saving.sharded_checkpoint import ShardedCheckpointWriter
from trainer.start import WRITER


class StoppedByLauncher(TrainerError, DataError):
    """torchrun sent SIGTERM: another rank failed, or the job was stopped. Rank 0 records it in train_stop."""


def _stop_on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the cleanup that follows must not be cut short
    raise StoppedByLauncher("stopped by SIGTERM from torchrun: another rank failed, or the job was stopped")


def rank_writer(rank: int) -> str:
    """The writer name of a rank's own segment: `trainer-rank<R>`."""
    return f"{WRITER}-rank{rank}"


class GatheredRollout(TorchRollout):
    """Samples with an unsharded copy of the policy; `refit` gathers the full weights from every shard."""

    def __init__(self, plain: Any, tokenizer: Tokenizer) -> None:
        super().__init__(plain, tokenizer)
        self.tokens = 0  # completion tokens of the last generate: this rank's share

    def generate(
        self, prompts: list[str], seeds: list[int], *, temperature: float, top_p: float, max_new_tokens: int
    ) -> list[list[int]]:
        out = super().generate(prompts, seeds, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens)
        self.tokens = sum(len(ids) for ids in out)
        return out

    def refit(self, model: Any) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))  # every rank: all of it
        self.model.load_state_dict(full, strict=True)


class DataParallelTrainer(GRPOTrainer):
    """One rank of a data-parallel run; `run()` as GRPOTrainer's, on every rank torchrun started."""

    def __init__(
        self,
        cfg: TrainConfig,
        *,
        ranks: Ranks,
        root: Path,
        run_id: str | None = None,
        model_cfg: ModelConfig | None = None,
    ) -> None:
        problems = check_data_parallel(cfg, ranks)
        if problems:
            raise DistributedError("; ".join(problems))
        super().__init__(cfg, root=root, run_id=run_id, ranks=ranks, model_cfg=model_cfg)
        self.rank_log: LogWriter | None = None
        self.shard_bytes = 0
        self.cleaned_up = False

    def setup(self) -> RunDir:
        """Rank 0 sets the run up as one process does; the others (start mode `ranks`) build the same model
        and wait for its init."""
        pin_cpu_kernels(self.pinned())  # before the process group loads torch
        join_process_group(self.ranks)
        # torchrun stops every rank with SIGTERM when one fails: rank 0 then records train_stop, not nothing.
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
        return super().setup()

    def _device(self) -> Any:
        """The config's device; on a rank other than 0, a GPU without an index is this rank's local one."""
        import torch

        device = super()._device()
        if self.start == "ranks" and device.type == "cuda" and device.index is None:
            device = torch.device("cuda", self.ranks.local_rank)
            torch.cuda.set_device(device)
        return device

    def _start_engines(self) -> None:
        """Rank 0's run and init to every rank, the rollout copy, then the shards (the optimizer holds them)."""
        from torch.distributed.fsdp import fully_shard

        self.run_dir = self.ranks.broadcast(self.run_dir if self.ranks.is_main else None)
        self.rank_log = LogWriter(self.run_dir, rank_writer(self.ranks.rank))
        self.ranks.broadcast_weights(self.model)
        self.plain = copy.deepcopy(self.model).eval()  # unsharded: samples, and is saved
        for layer in getattr(getattr(self.model, "model", None), "layers", []):
            fully_shard(layer)  # a block's weights are gathered only while it computes
        fully_shard(self.model)
        self.shard_bytes = sum(p.to_local().numel() * p.element_size() for p in self.model.parameters())
        super()._start_engines()

    def _make_rollout(self) -> Rollout:
        return GatheredRollout(self.plain, self.tokenizer)

    def _make_checkpoint_writer(self, model: Any) -> CheckpointWriter | ShardedCheckpointWriter | None:
        """Sharded (the default): every rank writes its own shard, rank 0 fingerprints the unsharded copy and
        commits. Consolidated (`checkpoint.format=safetensors`): rank 0 writes the unsharded copy alone."""
        if self.sharded_checkpoints():
            return ShardedCheckpointWriter(
                self.run_dir.checkpoints,
                lambda: self.plain,
                self.tokenizer,
                on_commit=self._committed,
                distributed=True,
                is_main=self.ranks.is_main,
            )
        return super()._make_checkpoint_writer(self.plain) if self.ranks.is_main else None

    def save_checkpoint(self, step: int, weight_update_ns: int) -> float:
        """Sharded: every rank saves its shard of the FSDP model. Consolidated: rank 0 saves the full weights
        the refit just gathered (the same step's); the others save nothing."""
        if self.ckpt is None:
            return 0.0
        if isinstance(self.ckpt, ShardedCheckpointWriter):
            return self.ckpt.save(self.model, step=step, weight_update_ns=weight_update_ns) / 1e9
        return self.ckpt.save(self.plain, step=step, weight_update_ns=weight_update_ns) / 1e9

    def sync_gradients(self, *, last: bool) -> None:
        """Accumulate unreduced gradients over a step's micro-batches: one reduce-scatter per step."""
        self.model.set_requires_gradient_sync(last)

    def train_step(self, step: int) -> StepResult:
        result = super().train_step(step)
        assert self.rank_log is not None and isinstance(self.rollout, GatheredRollout)
        share = self.ranks.share(self.cfg.num_prompts_per_step)
        self.rank_log.append(
            RankStep(
                rank=self.ranks.rank,
                world_size=self.ranks.world_size,
                prompts=len(share),
                samples=len(share) * self.cfg.num_generations_per_prompt,
                tokens=self.rollout.tokens,
                generation_s=result.generation_s,
                train_s=result.train_s,
                optimizer_done_ns=result.optimizer_done_ns,
                gather_s=result.refit_s,
                checkpoint_block_s=result.checkpoint_block_s,
                step_s=result.step_s,
                shard_bytes=self.shard_bytes,
                checkpoint=self.checkpoint_due(step),
            ),
            step=step,
        )
        return result

    def cleanup(self, status: Any, reason: str) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a SIGTERM now would cut train_stop short
        self.cleaned_up = True
        super().cleanup(status, reason)

    def run(self) -> TrainSummary:
        """GRPOTrainer.run; every rank closes its own segment and leaves the group, whatever happened."""
        try:
            return super().run()
        except StoppedByLauncher as e:
            # The SIGTERM came while another failure (a peer gone: a gloo error) was being handled, before its
            # cleanup began: record that failure now.
            if self.log is not None and not self.cleaned_up:
                cause = e.__context__ or e
                self.cleanup("failed", f"step {(self.last_step or 0) + 1}: {type(cause).__name__}: {cause}")
            raise
        finally:
            if self.rank_log is not None:
                self.rank_log.close()
            leave_process_group()


def check_data_parallel(cfg: TrainConfig, ranks: Ranks) -> list[str]:
    """What in `cfg` a data-parallel run of `ranks.world_size` processes cannot do, each with its fix."""
    problems = []
    if cfg.num_prompts_per_step < ranks.world_size:
        problems.append(
            f"num_prompts_per_step: {cfg.num_prompts_per_step} prompts cannot be shared by {ranks.world_size} "
            f"ranks (each samples whole prompts); use at most {cfg.num_prompts_per_step} processes"
        )
    elif cfg.num_prompts_per_step % (ranks.world_size * cfg.updates_per_rollout) != 0:
        # Every rank must take the same optimizer steps on whole prompts (FSDP's collectives pair up), and
        # mini-batch u must be the single process's: rank blocks aligned to the strided split
        # (trainer/learning/update.py).
        problems.append(
            f"updates_per_rollout: {cfg.updates_per_rollout} mini-batches of whole prompts on each of "
            f"{ranks.world_size} ranks need num_prompts_per_step to be a multiple of "
            f"{ranks.world_size * cfg.updates_per_rollout}, or updates_per_rollout=1"
        )
    if cfg.rollout == "vllm":
        problems.append("rollout: vllm is one process's engine; data parallel samples with rollout=torch")
    return problems
