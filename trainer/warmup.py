"""The supervised init: trained before init_start (outside the timed region), cached by its settings.

It stops at the first check where pass@k on the DEV split reaches `warmup.stop_dev_accuracy` (never the
validation set): a calibrated start, so that seeds start near the same accuracy, below the target, and GRPO
has to earn the crossing.

Training it is most of a first run's time on a CPU (with the pinned kernels about 350 batches and 70 dev
checks, some 170 s on 2 cores), so recorder ships the default config's init (`SHIPPED`, the cache's own layout:
`<key>/model.safetensors` and `meta.json`, which says where it was made). `warmup.shipped` (default true) takes
it when its key is the run's: the same settings, seed, model and float order, made by this code. It was made
with `recorder train --set warmup.shipped=false --set warmup.cache_dir=trainer/warmup_inits`; with
`warmup.shipped=false` a run uses, or trains, its own.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from recorder.user_paths import user_path
from trainer.config import TrainConfig
from trainer.learning.grpo import build_batch, token_logprobs
from trainer.policy.kernels import cpu_model, kernel_set
from trainer.policy.model import ModelConfig
from trainer.policy.sampling import generate, sample_seed
from trainer.policy.task import Task, dev_tasks, reward, warmup_tasks
from trainer.policy.tokenizer import Tokenizer

VERSION = "warmup-v2"  # bump when the warm-up's code changes what it produces
WarmupCheck = Callable[[int, float], None]  # (batches trained, dev pass@k measured after them)
SHIPPED = Path(__file__).resolve().parent / "warmup_inits"  # inits made by this code, one folder per cache key


@dataclass(frozen=True)
class WarmupResult:
    batches: int
    dev_accuracy: float
    cached: bool
    seconds: float
    cache_path: str
    shipped: bool = False  # loaded from SHIPPED (then also `cached`), not from the user's cache
    sha256: str | None = None  # of the init's safetensors bytes: the very bytes the policy was loaded from


def pass_at_k(
    model: Any,
    tokenizer: Tokenizer,
    tasks: list[Task],
    *,
    k: int,
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    salt: str = "eval",
    batch_size: int = 256,
) -> float:
    """Fraction of tasks with at least one exact answer among k samples; sample j of task i uses
    seed sample_seed(salt, i, j), so the score does not depend on batch size."""
    prompts = [t.prompt for t in tasks for _ in range(k)]
    seeds = [sample_seed(salt, i, j) for i in range(len(tasks)) for j in range(k)]
    outs: list[str] = []
    for s in range(0, len(prompts), batch_size):
        outs += generate(
            model,
            tokenizer,
            prompts[s : s + batch_size],
            temperature=temperature,
            top_p=top_p,
            max_new_tokens=max_new_tokens,
            seeds=seeds[s : s + batch_size],
        )
    passed = sum(any(reward(t, outs[i * k + j]) == 1.0 for j in range(k)) for i, t in enumerate(tasks))
    return passed / len(tasks)


def cache_key(cfg: TrainConfig, model_cfg: ModelConfig, kernels: Mapping[str, str] | None = None) -> str:
    """The warm-up's settings and the float order it computes in (trainer/policy/kernels.py; `kernels`:
    this process's unless given): an init trained with other kernels is another init, and one taken from the
    cache would mix float orders. Where an init is looked up (`cache_dir`, `shipped`) is not part of it."""
    w = asdict(cfg.warmup)
    del w["cache_dir"], w["shipped"]
    settings = {"v": VERSION, "seed": cfg.seed, "model": asdict(model_cfg), "warmup": w, "eval": asdict(cfg.eval)}
    blob = json.dumps({**settings, "kernels": dict(kernels or kernel_set())}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def warm_start(
    model: Any, tokenizer: Tokenizer, cfg: TrainConfig, model_cfg: ModelConfig, on_check: WarmupCheck | None = None
) -> WarmupResult:
    """Load the cached init for this config into `model`, or train it (and cache it), calling `on_check` after
    each dev check of the training (the minutes a first run waits on)."""
    import time

    from safetensors.torch import load, save

    t0 = time.perf_counter()
    key = cache_key(cfg, model_cfg)
    directory = user_path(cfg.warmup.cache_dir) / key
    for found, shipped in ((SHIPPED / key, True), (directory, False)):
        if (shipped and not cfg.warmup.shipped) or not _is_init(found):
            continue
        data = (found / "model.safetensors").read_bytes()  # read once: hashed, and loaded from these bytes
        model.load_state_dict(load(data), strict=True)
        info = json.loads((found / "meta.json").read_text())
        took = time.perf_counter() - t0
        sha = hashlib.sha256(data).hexdigest()
        return WarmupResult(info["batches"], info["dev_accuracy"], True, took, str(found), shipped, sha)
    batches, acc = _train(model, tokenizer, cfg, on_check)
    directory.mkdir(parents=True, exist_ok=True)
    data = save({k: v.contiguous() for k, v in model.state_dict().items()})
    tmp = directory / f".tmp-{time.time_ns()}.safetensors"
    tmp.write_bytes(data)
    tmp.rename(directory / "model.safetensors")
    (directory / "meta.json").write_text(json.dumps(_meta(key, batches, acc), indent=1) + "\n")
    took = time.perf_counter() - t0
    return WarmupResult(batches, acc, False, took, str(directory), sha256=hashlib.sha256(data).hexdigest())


def _is_init(directory: Path) -> bool:
    return (directory / "model.safetensors").is_file() and (directory / "meta.json").is_file()


def _meta(key: str, batches: int, accuracy: float) -> dict[str, Any]:
    """What a made init says about itself: its key and result, and where and how it was made (the CPU, the
    kernels and torch), for an init that travels (a shipped one) to say where it came from."""
    import torch

    made = {
        "cpu": cpu_model(),
        "kernels": kernel_set(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    return {"batches": batches, "dev_accuracy": accuracy, "key": key, "made": made}


def _train(model: Any, tokenizer: Tokenizer, cfg: TrainConfig, on_check: WarmupCheck | None) -> tuple[int, float]:
    import torch

    w, ev = cfg.warmup, cfg.eval
    dev = dev_tasks()
    opt = torch.optim.AdamW(model.parameters(), lr=w.learning_rate, weight_decay=0.0)

    def dev_acc() -> float:
        return pass_at_k(
            model,
            tokenizer,
            dev,
            k=ev.k,
            temperature=ev.temperature,
            top_p=ev.top_p,
            max_new_tokens=ev.max_new_tokens,
            salt="dev",
        )

    acc = dev_acc()
    if on_check is not None:
        on_check(0, acc)
    for b in range(1, w.max_batches + 1):
        if acc >= w.stop_dev_accuracy:
            return b - 1, acc
        tasks = warmup_tasks(cfg.seed, b, w.batch_size)
        prompts = [[tokenizer.bos_id, *tokenizer.encode(t.prompt)] for t in tasks]
        answers = [[*tokenizer.encode(t.answer), tokenizer.eos_id] for t in tasks]
        batch = build_batch(prompts, answers, tokenizer.pad_id)
        model.train()
        logits = model(input_ids=batch.inputs).logits
        nll = -(token_logprobs(logits, batch.targets) * batch.mask).sum() / batch.mask.sum()
        opt.zero_grad(set_to_none=True)
        nll.backward()
        opt.step()
        if b % w.check_every == 0 or acc >= w.stop_dev_accuracy - w.check_every_batch_within:
            acc = dev_acc()
            if on_check is not None:
                on_check(b, acc)
    return w.max_batches, acc
