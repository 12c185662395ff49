"""Pinned CPU kernels: one float order whichever kernels the CPU offers (the tiny model's default).

torch picks its CPU kernels by the CPU it runs on (ATen: AVX-512, AVX2 or portable code; MKL: a GEMM code
path per CPU family), and each sums floats in its own order. The tiny model's warm-up and GRPO path amplify
those last-bit differences into different runs: on one Intel Xeon the default seed's better checkpoint
scored 0.749, 0.749 and 0.793 under its AVX-512, AVX2 and portable kernels, and 3 to 5 of 5 seeds crossed
the target depending on the set (bench/README.md, "Learning is real"). A main job that passes on one CPU and
fails on the next is not a default.

Pinned, a run computes with ATen's portable kernels and MKL's compatible code path (`PINNED`), which every
x86-64 CPU can run, at a fixed thread count (the config's `threads`), so every kernel set a CPU would pick
takes the same path (on one Xeon, AVX-512, AVX2 and portable settings gave the same inits and scores).
`RECORDER_CPU_KERNELS` chooses: `auto` (unset) pins the built-in tiny model trained with its torch rollout,
where the float order decides the outcome and the cost is bearable (a first run, warm-up included, about 2.5x
the wall time; later runs about 1.3x); `native` keeps the CPU's own kernels (fastest); `pinned` pins any run.
A pretrained model or a vLLM rollout is not pinned by default: it does not sit on that edge, and portable
kernels would cost it far more.

Both variables are read once, when torch loads: `pin_cpu_kernels` runs before the first `import torch` of
the trainer's process (Ray workers and torchrun ranks inherit the environment); the run records the kernels
it computed with (`provenance.cpu_kernels`), a resumed run keeps them, and the evaluator pins a pinned run's
evaluation likewise. In a process that already loaded torch it changes nothing, and `is_pinned` says so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from trainer.policy.errors import KernelChoiceError

PINNED: Mapping[str, str] = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
CHOICE = "RECORDER_CPU_KERNELS"
CHOICES = ("auto", "native", "pinned")


def wants_pinned(model: str, rollout: str) -> bool:
    """Whether a run of `model` with `rollout` computes pinned, as `RECORDER_CPU_KERNELS` says (unset: auto,
    which pins the built-in tiny model with a torch rollout). A value it does not know is refused, not read
    as native: a misspelt `pinned` would silently change the run's float order."""
    choice = os.environ.get(CHOICE, "").strip().lower() or "auto"
    if choice not in CHOICES:
        raise KernelChoiceError(f"{CHOICE}={os.environ[CHOICE]!r}: expected one of {', '.join(CHOICES)} (unset: auto)")
    if choice == "auto":
        return model == "tiny" and rollout != "vllm"
    return choice == "pinned"


def recorded_pinned(provenance: Mapping[str, Any] | None) -> bool:
    """Whether a run's recorded provenance says it computed with the pinned kernels. ATen's capability is
    compared in torch's spelling whatever its case: a run that recorded the environment's request before
    torch loaded wrote it in lower case."""
    kernels = (provenance or {}).get("cpu_kernels")
    if not isinstance(kernels, Mapping) or set(kernels) != {"aten", "mkl_cbwr"}:
        return False
    aten = kernels["aten"]
    return isinstance(aten, str) and aten.upper() == "DEFAULT" and kernels["mkl_cbwr"] == PINNED["MKL_CBWR"]


def pin_cpu_kernels(pinned: bool) -> bool:
    """Set the pinned kernels in this process's environment when asked and torch has not loaded yet (they
    override a caller's ATEN_CPU_CAPABILITY/MKL_CBWR: the point is one float order). Returns whether they
    are in effect."""
    if pinned and "torch" not in sys.modules:
        os.environ.update(PINNED)
    return is_pinned()


def is_pinned() -> bool:
    """True when this process computes (or, before torch loads, will compute) with the pinned kernels."""
    if any(os.environ.get(name) != value for name, value in PINNED.items()):
        return False
    torch: Any = sys.modules.get("torch")
    return torch is None or str(torch.backends.cpu.get_cpu_capability()) == "DEFAULT"


def kernel_set() -> dict[str, str]:
    """The float order this process computes in (loads torch): ATen's kernels, MKL's code path, threads.
    Without MKL_CBWR, MKL chooses by CPU model, so the CPU is part of it."""
    import torch

    mkl = os.environ.get("MKL_CBWR", "")
    return {
        "aten": str(torch.backends.cpu.get_cpu_capability()),
        "mkl_cbwr": mkl if mkl else f"auto ({cpu_model()})",
        "threads": str(torch.get_num_threads()),
    }


def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo; elsewhere the platform's processor string)."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
