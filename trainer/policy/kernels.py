"""Pinned CPU kernels: one float order, so the same bits, on every x86-64 CPU (opt-in).

torch picks its CPU kernels by the CPU it runs on (ATen: AVX-512, AVX2 or portable code; MKL: a GEMM code
path per CPU family), and each sums floats in its own order. The tiny model's warm-up and GRPO path amplify
those last-bit differences into different runs: the default run's step 18 scored 0.829 with AVX-512 kernels
and 0.773 with AVX2 ones on one AMD EPYC, 0.721 on an Intel Xeon (bench/README.md, "Learning is real").

`RECORDER_CPU_KERNELS=pinned` makes a run compute with ATen's portable kernels and MKL's compatible code
path (`PINNED`), which every x86-64 CPU runs alike at a fixed thread count (the config's `threads`): the
run takes the same path on every machine. It is not the default because it costs: about 3x the CPU time
of the tiny model's training (MKL's compatible path most of it), measured in bench/README.md.

Both variables are read once, when torch loads: `pin_cpu_kernels` runs before the first `import torch` of
the trainer's process (Ray workers and torchrun ranks inherit the environment); the run records the kernels
it computed with (`provenance.cpu_kernels`), and the evaluator pins a pinned run's evaluation likewise. In a
process that already loaded torch it changes nothing, and `is_pinned` says so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

PINNED: Mapping[str, str] = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
CHOICE = "RECORDER_CPU_KERNELS"  # native (the CPU's own, the default) | pinned


def wants_pinned() -> bool:
    """Whether this process was asked to pin (`RECORDER_CPU_KERNELS=pinned`)."""
    return os.environ.get(CHOICE, "native") == "pinned"


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
