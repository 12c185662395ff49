"""The arguments vLLM's engine is built with for a large model: tensor and pipeline parallelism, experts
spread over the GPUs, the rollout's quantization, Ray as the executor. (The engine itself runs in the
`vllm`-marked tests; these settings need GPUs or a cluster, so they are checked as what the engine gets.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.errors import SettingsError
from evaluator.scoring import Loading
from evaluator.settings import Options
from evaluator.vllm_engine.vllm_backend import VllmParallel, engine_arguments

CONFIG = {"max_position_embeddings": 262144}


def test_one_gpu_builds_the_engine_as_before() -> None:
    args = engine_arguments(Path("/m"), CONFIG, Loading(task="t", dtype="bf16"), VllmParallel())
    assert args["dtype"] == "bfloat16" and args["max_model_len"] == 8192
    assert (args["tensor_parallel_size"], args["pipeline_parallel_size"], args["enable_expert_parallel"]) == (
        1,
        1,
        False,
    )
    assert "distributed_executor_backend" not in args and "quantization" not in args


def test_a_397b_moe_on_a_ray_cluster() -> None:
    parallel = VllmParallel(
        tensor_parallel_size=8, pipeline_parallel_size=2, enable_expert_parallel=True, quantization="fp8",
        ray_address="ray://head:10001",
    )  # fmt: skip
    args = engine_arguments(Path("/m"), CONFIG, Loading(task="t", dtype="bf16"), parallel)
    assert {k: args[k] for k in parallel.engine_arguments()} == {
        "tensor_parallel_size": 8,
        "pipeline_parallel_size": 2,
        "enable_expert_parallel": True,
        "quantization": "fp8",
        "distributed_executor_backend": "ray",
    }


def test_several_gpus_use_ray_even_without_an_address() -> None:
    assert VllmParallel(tensor_parallel_size=2).engine_arguments()["distributed_executor_backend"] == "ray"


def test_parallel_settings_are_for_vllm_only() -> None:
    with pytest.raises(SettingsError, match="--backend vllm"):
        Options(tensor_parallel_size=8)
    Options(backend="vllm", tensor_parallel_size=8, enable_expert_parallel=True, quantization="fp8")
