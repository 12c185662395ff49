"""The GRPO recipe: `setup`, `train`, `save_checkpoint`, `cleanup` (torchtune's recipe protocol).

How a session starts (a new run, a resumed one, a data-parallel rank) is its start mode (trainer/start.py).

Event order of a new run: run_opened, mllog_config x N, (warm-up, untimed), init_start, init_stop, run_start,
block_start, then per step: weight_update, [checkpoint save; its checkpoint_committed arrives when durable],
step_metrics; block_stop, train_stop. Checkpoints exactly from the validation start to the final step.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recorder.checkpoints.recorder_format import load_checkpoint
from recorder.store.kinds import (
    NULL,
    BlockStart,
    BlockStop,
    InitStart,
    InitStop,
    Payload,
    RunStart,
    StepMetrics,
    TrainStatus,
    TrainStop,
    Warmup,
    WeightUpdate,
)
from recorder.store.log import LogWriter
from recorder.store.run import RunDir
from trainer.config import TrainConfig
from trainer.device import resolve_device, resolve_dtype, synchronize
from trainer.errors import CheckpointError, TrainingFailed
from trainer.parallel.distributed import Ranks
from trainer.policy.kernels import pin_cpu_kernels, wants_pinned
from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.policy.sampling import sample_seed
from trainer.policy.tokenizer import Tokenizer
from trainer.resume import ResumePlan, open_resumed_session
from trainer.rollout import Rollout, TorchRollout
from trainer.saving.checkpoint import CheckpointWriter, SavedCheckpoint, checkpoint_payload
from trainer.saving.sharded_checkpoint import ShardedCheckpointWriter
from trainer.start import StartMode, open_fresh_run, start_mode
from trainer.training_task import TrainingTask, training_task
from trainer.warmup import WarmupCheck, WarmupResult, warm_start


@dataclass(frozen=True)
class StepResult:
    step: int
    loss: float
    reward: float
    grad_norm: float
    tokens: int
    samples: int
    generation_s: float
    train_s: float
    refit_s: float
    checkpoint_block_s: float
    step_s: float
    optimizer_done_ns: int  # this process's optimizer step (data parallel: the weight update is the last rank's)


@dataclass
class TrainSummary:
    run: RunDir
    steps: list[StepResult] = field(default_factory=list)
    checkpoints: list[SavedCheckpoint] = field(default_factory=list)
    warmup: WarmupResult | None = None


class GRPOTrainer:
    """One training run. `run()` does setup, train and cleanup, and records train_stop either way."""

    def __init__(
        self,
        cfg: TrainConfig,
        *,
        root: Path,
        run_id: str | None = None,
        resume: ResumePlan | None = None,
        ranks: Ranks | None = None,
        ray_address: str | None = None,
        use_ray: bool = False,
        on_step: Callable[[StepResult, int], None] | None = None,
        model_cfg: ModelConfig | None = None,
        model: Any = None,
        tokenizer: Tokenizer | None = None,
        task: TrainingTask | None = None,
    ) -> None:
        """`resume`: continue that planned run (trainer/resume.py); `ranks`: this process's place under
        torchrun (trainer/parallel/data_parallel.py). `model`, `tokenizer` and `task` replace what `cfg` names (a bench
        or a test bringing its own); an injected model gets no warm-up."""
        self.cfg = cfg
        self.model_cfg = model_cfg or ModelConfig(name=cfg.model, init_seed=cfg.seed)
        self._given_model, self._given_tokenizer, self._given_task = model, tokenizer, task
        self.root, self.run_id = Path(root), run_id
        self.use_ray, self.ray_address = use_ray, ray_address
        self.on_step = on_step
        self.on_warmup: WarmupCheck | None = None  # each dev check of a warm-up made now (trainer/warmup.py)
        self.plan = resume
        self.ranks = ranks or Ranks()
        self.start: StartMode = start_mode(resuming=resume is not None, ranks=self.ranks)
        self.first_step = 1  # a resumed session starts after its checkpoint's step
        self.last_step: int | None = None
        self.log: LogWriter | None = None  # data parallel: rank 0's only (the other ranks record no run events)
        self.ckpt: CheckpointWriter | ShardedCheckpointWriter | None = None
        self.rollout: Rollout | None = None
        self.model: Any = None  # from setup (`_load_policy`)

    @classmethod
    def resuming(cls, plan: ResumePlan, **kwargs: Any) -> GRPOTrainer:
        """A trainer that continues `plan`'s run in its folder, with its recorded config."""
        # run_id names the folder to reopen; the events appended keep the run's recorded id (LogWriter)
        return cls(plan.config, root=plan.run.path.parent, run_id=plan.run.path.name, resume=plan, **kwargs)

    # -- setup ---------------------------------------------------------------------------------------------
    def pinned(self) -> bool:
        """Whether this session computes with pinned CPU kernels (trainer/policy/kernels.py): as the
        environment asks for a new run, as it started for a resumed one (one run, one float order)."""
        if self.plan is not None:
            return self.plan.pinned
        return wants_pinned(self.cfg.model, self.cfg.rollout)

    def setup(self) -> RunDir:
        """Open the session the start mode asks for, load the policy, start the engines; a fresh run then
        opens the timed region."""
        cfg = self.cfg
        pin_cpu_kernels(self.pinned())  # before torch loads, and before run_opened records the kernels
        if self.start == "fresh":
            self.run_dir, self.log = open_fresh_run(cfg, self.root, self.run_id)  # a taken id: refused before torch
        import torch

        torch.set_num_threads(cfg.threads)
        if self.plan is not None:  # torch loaded: its run_opened records the kernels torch computes with
            self.run_dir, self.log = self.plan.run, open_resumed_session(self.plan)
        else:
            torch.manual_seed(cfg.seed)  # a resumed session's weights come from its checkpoint, not the seed
        self.device, self.dtype = self._device(), resolve_dtype(cfg.dtype)
        warmup = self._load_policy()
        _to_device(self.model, self.device, self.dtype)
        if self.start == "fresh":
            self._record_init_start(warmup)
        self._start_engines()
        self.summary = TrainSummary(self.run_dir, warmup=warmup)  # a rank's run folder is known from here on
        if self.log is not None:
            self.log.append(InitStop())
        if self.start == "fresh":
            assert self.log is not None
            self.log.append(RunStart())
        return self.run_dir

    def _device(self) -> Any:
        return resolve_device(self.cfg.device)

    def _load_policy(self) -> WarmupResult | None:
        """The model, tokenizer and task: a resumed session's from its checkpoint, else built from the config
        (or given); a fresh run's own tiny model is warm-started. Returns the warm-up, if there was one."""
        cfg = self.cfg
        if self.plan is not None:
            self.model, self.tokenizer = load_checkpoint(self.plan.checkpoint)
            self.task = training_task(cfg.task, self.tokenizer)
            self.first_step, self.last_step = self.plan.step + 1, self.plan.step
            return None
        self.tokenizer = self._given_tokenizer or build_tokenizer(self.model_cfg)
        self.model = self._given_model if self._given_model is not None else build_model(self.model_cfg)
        self.task = self._given_task or training_task(cfg.task, self.tokenizer)
        tiny_addition = cfg.model == "tiny" and cfg.task == "addition" and self._given_model is None
        if self.start == "fresh" and cfg.warmup.enabled and tiny_addition:
            return warm_start(self.model, self.tokenizer, cfg, self.model_cfg, self.on_warmup)
        return None

    def _record_init_start(self, w: WarmupResult | None) -> None:
        assert self.log is not None
        warmup = (
            NULL
            if w is None
            else Warmup(
                batches=w.batches,
                dev_accuracy=w.dev_accuracy,
                cached=w.cached,
                seconds=w.seconds,
                cache_path=w.cache_path,
                sha256=w.sha256,
            )
        )
        self.log.append(InitStart(warmup=warmup))

    def _start_engines(self) -> None:
        """The optimizer (fresh AdamW state), the rollout backend and the checkpoint writer, for self.model."""
        import torch

        cfg = self.cfg
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(),
            lr=cfg.learning_rate,
            betas=(cfg.adam_beta1, cfg.adam_beta2),
            eps=cfg.adam_epsilon,
            weight_decay=cfg.weight_decay,
            # One kernel over every tensor (what TRL's default `adamw_torch_fused` is): 0.5 s a step at 135M
            # parameters on this CPU, where the per-tensor loop took 3.2 s. Sharded (DTensor) weights keep
            # the per-tensor path.
            fused=not self.ranks.distributed,
        )
        self.rollout = self._make_rollout()
        self.ckpt = self._make_checkpoint_writer(self.model)

    def sharded_checkpoints(self) -> bool:
        """Whether `checkpoint.format` (`auto` resolved: sharded under torchrun, consolidated in one process)
        writes sharded torch DCP checkpoints."""
        return self.cfg.checkpoint.sharded(self.ranks.distributed)

    def _make_checkpoint_writer(self, model: Any) -> CheckpointWriter | ShardedCheckpointWriter | None:
        """The writer of this run's checkpoints of `model` (data parallel: rank 0's only)."""
        import torch

        if self.sharded_checkpoints():
            return ShardedCheckpointWriter(
                self.run_dir.checkpoints,
                lambda: model,
                self.tokenizer,
                on_commit=self._committed,
                distributed=False,
                is_main=True,
            )

        # The writer fingerprints each snapshot on a shadow model in its thread, with host tensors: on a GPU
        # the shadow is a host copy.
        on_host = self.device.type == "cpu"
        return CheckpointWriter(
            self.run_dir.checkpoints,
            model if on_host else copy.deepcopy(model).to("cpu", torch.float32),
            self.tokenizer,
            sync=self.cfg.checkpoint.sync,
            on_commit=self._committed,
            max_pending=self.cfg.checkpoint.max_pending,
        )

    def _rollout_kind(self) -> str:
        """`auto`: vLLM for a pretrained model on a GPU (the torch sampler is the batch-invariant reference)."""
        if self.cfg.rollout != "auto":
            return self.cfg.rollout
        if self.cfg.pretrained and self.device.type == "cuda" and not self.use_ray:
            import importlib.util

            if importlib.util.find_spec("vllm") is not None:
                return "vllm"
        return "torch"

    def _make_rollout(self) -> Rollout:
        if self._rollout_kind() == "vllm":
            from trainer.vllm_rollout import VllmRollout

            return VllmRollout(self.model, self.tokenizer, gpu_memory_utilization=self.cfg.vllm_gpu_memory_utilization)
        if self.use_ray:
            from trainer.rollout import RayRollout

            return RayRollout(self.model, self.tokenizer, workers=self.cfg.ray_workers, address=self.ray_address)
        return TorchRollout(self.model, self.tokenizer)

    # -- train ---------------------------------------------------------------------------------------------
    def train(self) -> None:
        """Steps 1..max_steps, a full global batch each; checkpoints from the validation start on."""
        cfg = self.cfg
        gbs = cfg.global_batch_size
        self._record(BlockStart(), step=self.first_step, samples_count=(self.first_step - 1) * gbs)
        for step in range(self.first_step, cfg.max_steps + 1):
            result = self.train_step(step)
            self.last_step = step
            self.summary.steps.append(result)
            self._record(_metrics(result), step=step, samples_count=step * gbs)
            if self.on_step is not None:
                self.on_step(result, len(self.summary.checkpoints))
        if self.ckpt is not None:
            self.ckpt.close()  # every pending checkpoint is durable (and committed) before the block ends
        self._record(BlockStop(), step=cfg.max_steps, samples_count=cfg.max_steps * gbs)

    def _record(self, payload: Payload, *, step: int, samples_count: int, time_ns: int | None = None) -> None:
        """Append a run event; a data-parallel rank other than 0 has no run log and records none."""
        if self.log is not None:
            self.log.append(payload, step=step, samples_count=samples_count, time_ns=time_ns)

    def train_step(self, step: int) -> StepResult:
        import torch

        from trainer.learning.grpo import build_batch, group_advantages
        from trainer.learning.update import policy_update

        assert self.rollout is not None
        cfg, tok, device = self.cfg, self.tokenizer, self.device
        synchronize(device)
        t0 = time.perf_counter()
        problems = self.task.problems(cfg.seed, step, cfg.num_prompts_per_step)
        mine = self.ranks.share(len(problems))  # this process's prompts: all of them in one process
        group = cfg.num_generations_per_prompt
        prompts = [problems[p].prompt for p in mine for _ in range(group)]
        seeds = [sample_seed(cfg.seed, step, p, g) for p in mine for g in range(group)]
        completions = self.rollout.generate(
            prompts,
            seeds,
            temperature=cfg.rollout_temperature,
            top_p=cfg.rollout_top_p,
            max_new_tokens=cfg.max_new_tokens,
        )
        t1 = time.perf_counter()
        scores = [self.task.reward(problems[mine[i // group]], tok.decode(c)) for i, c in enumerate(completions)]
        rewards = torch.tensor(scores)
        advantages = group_advantages(rewards, group).to(device)  # [B*G]
        prompt_ids = [[tok.bos_id, *tok.encode(p)] for p in prompts]
        batch = build_batch(prompt_ids, completions, tok.pad_id).to(device)
        stats = policy_update(
            self.model,
            self.optimizer,
            batch,
            advantages,
            group_size=group,
            updates=cfg.updates_per_rollout,
            micro_batch_size=cfg.micro_batch_size,
            clip_epsilon=cfg.clip_epsilon,
            grad_clip_norm=cfg.grad_clip_norm,
            ranks=self.ranks,
            sync_gradients=self.sync_gradients,
        )
        synchronize(device)  # the update is done when the device says so, not when the call returns
        done_ns = time.time_ns()
        self.ranks.barrier()  # data parallel: the weights are updated once the last rank's step is done
        # THE weight-update timestamp: right after the optimizer step returns (the last rank's)
        update_ns = time.time_ns() if self.ranks.distributed else done_ns
        self._record(WeightUpdate(), step=step, samples_count=step * cfg.global_batch_size, time_ns=update_ns)
        t2 = time.perf_counter()
        self.rollout.refit(self.model)
        t3 = time.perf_counter()
        blocked_s = self.save_checkpoint(step, update_ns) if self.checkpoint_due(step) else 0.0
        synchronize(device)
        t4 = time.perf_counter()
        loss_total, reward_total, samples = self.ranks.sum([stats.loss, float(rewards.sum()), len(prompts)])
        return StepResult(
            step=step,
            loss=loss_total,
            reward=reward_total / samples,
            grad_norm=stats.grad_norm,
            tokens=stats.tokens,
            samples=int(samples),
            generation_s=t1 - t0,
            train_s=t2 - t1,
            refit_s=t3 - t2,
            checkpoint_block_s=blocked_s,
            step_s=t4 - t0,
            optimizer_done_ns=done_ns,
        )

    def sync_gradients(self, *, last: bool) -> None:
        """Before a micro-batch's backward: data parallel reduces gradients over the ranks on the last one only."""

    def checkpoint_due(self, step: int) -> bool:
        """Checkpoints exactly from the validation start on (a bench may save at every step)."""
        return step >= self.cfg.validation_start

    def save_checkpoint(self, step: int, weight_update_ns: int) -> float:
        """Save this step's weights (async by default); returns the seconds the loop was blocked."""
        assert self.ckpt is not None
        return self.ckpt.save(self.model, step=step, weight_update_ns=weight_update_ns) / 1e9

    def _committed(self, saved: SavedCheckpoint) -> None:
        assert self.log is not None
        self.summary.checkpoints.append(saved)
        self.log.append(
            checkpoint_payload(saved, self.run_dir.path),
            step=saved.step,
            samples_count=saved.step * self.cfg.global_batch_size,
        )

    # -- cleanup -------------------------------------------------------------------------------------------
    def cleanup(self, status: TrainStatus, reason: str) -> None:
        """Record train_stop (always), then release the rollout backend and close the log."""
        if self.ckpt is not None and status != "completed":
            try:
                self.ckpt.close()  # let in-flight writes finish (or fail) so nothing is committed after train_stop
            except CheckpointError as e:
                reason = reason if reason else str(e)
        if self.log is not None:
            step = self.last_step
            self.log.append(
                TrainStop(status=status, reason=reason),
                step=step,
                samples_count=None if step is None else step * self.cfg.global_batch_size,
            )
        if self.rollout is not None:
            self.rollout.close()
        if self.log is not None:
            self.log.close()

    def run(self) -> TrainSummary:
        """setup + train + cleanup. A failure ends the run with train_stop(status failed) and TrainingFailed."""
        try:
            self.setup()
            self.train()
        except KeyboardInterrupt:
            self.cleanup("interrupted", "interrupted by the user (SIGINT)")
            raise
        except Exception as e:
            if self.log is None:  # nothing recorded yet: a plain input error (e.g. an existing run id)
                raise
            where = f"step {self.last_step + 1 if self.last_step is not None else 1}"
            reason = str(e) if isinstance(e, CheckpointError) else f"{where}: {type(e).__name__}: {e}"
            self.cleanup("failed", reason)
            raise TrainingFailed(f"training failed ({reason}); see {self.run_dir.path}/events (train_stop)") from e
        self.cleanup("completed", "")
        return self.summary


def _to_device(model: Any, device: Any, dtype: Any) -> None:
    """Move (in place) the weights of a torch module."""
    model.to(device=device, dtype=dtype)


def _metrics(r: StepResult) -> StepMetrics:
    return StepMetrics(
        loss=r.loss,
        reward=r.reward,
        grad_norm=r.grad_norm,
        tokens=r.tokens,
        samples=r.samples,
        generation_s=r.generation_s,
        train_s=r.train_s,
        refit_s=r.refit_s,
        checkpoint_block_s=r.checkpoint_block_s,
        step_s=r.step_s,
    )
