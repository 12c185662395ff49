"""Checkpoint loading with every integrity check against a plain load with none, on one sharded checkpoint.

Writes one checkpoint of `--size-gb` GB in `--shards` shards twice, in a temporary directory: as torch DCP
(FileSystemWriter, one file per tensor) and as Hugging Face safetensors shards. Then, per format, in
alternating rounds (so machine drift hits both alike): the plain load (`torch.distributed.checkpoint.load`
into preallocated tensors, no process group; `safetensors.torch.load_file` per shard, each tensor copied out
of its mapping as a load into a model copies it) and ours (recorder.checkpoints.readers.load_state_dict: every
shard hashed while it is read and checked against the committed manifest, DCP's .metadata through the
allow-listing unpickler). Prints the best wall and CPU seconds of each and the ratio ours / plain.

`--cache cold` (the default) evicts the checkpoint's files from the page cache before every load
(posix_fadvise DONTNEED, no root needed), as an evaluator meets a checkpoint it has not read: the target,
at most 1.10x, says integrity costs at most one read. `--cache warm` loads from the page cache, where
hashing is pure CPU on top of a memory copy. Measure on an idle machine with memory for the checkpoint
twice over.

    python bench/checkpoint_io.py                       # 4 GB in 8 shards, cold
    python bench/checkpoint_io.py --cache both
    python bench/checkpoint_io.py --size-gb 0.05        # a quick check that it runs
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _tensors(size_gb: float, shards: int) -> dict[str, Any]:
    """`shards` bf16 tensors making `size_gb` GB together."""
    import torch

    per = int(size_gb * 1e9 / shards / 2)  # bf16: 2 bytes
    gen = torch.Generator().manual_seed(0)
    return {f"layers.{i}.weight": torch.randn(per, generator=gen).to(torch.bfloat16) for i in range(shards)}


def write_checkpoints(root: Path, size_gb: float, shards: int) -> tuple[Path, Path]:
    import torch.distributed.checkpoint as dcp
    from safetensors.torch import save_file
    from torch.distributed.checkpoint import FileSystemWriter

    tensors = _tensors(size_gb, shards)
    config = json.dumps({"model_type": "llama"})
    dcp_dir, hf_dir = root / "dcp", root / "hf"
    dcp.save(tensors, storage_writer=FileSystemWriter(str(dcp_dir), single_file_per_rank=False), no_dist=True)
    (dcp_dir / "config.json").write_text(config)
    hf_dir.mkdir()
    names = sorted(tensors)
    weight_map = {}
    for i, name in enumerate(names):
        file = f"model-{i + 1:05d}-of-{len(names):05d}.safetensors"
        save_file({name: tensors[name]}, str(hf_dir / file))
        weight_map[name] = file
    (hf_dir / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (hf_dir / "config.json").write_text(config)
    (hf_dir / "tokenizer_config.json").write_text("{}")  # a Hugging Face directory has one; not read here
    return dcp_dir, hf_dir


def plain_dcp(path: Path) -> Callable[[], object]:
    import torch
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import FileSystemReader

    meta = FileSystemReader(str(path)).read_metadata()
    shapes = {k: (tuple(v.size), v.properties.dtype) for k, v in meta.state_dict_metadata.items()}

    def load() -> object:
        state = {k: torch.empty(s, dtype=d) for k, (s, d) in shapes.items()}
        dcp.load(state, checkpoint_id=str(path), no_dist=True)
        return state

    return load


def plain_safetensors(path: Path) -> Callable[[], object]:
    from safetensors.torch import load_file

    def load() -> object:
        # copied out of the file's mapping, as a load into a model copies them (and as ours does)
        return {k: v.clone() for f in sorted(path.glob("*.safetensors")) for k, v in load_file(str(f)).items()}

    return load


def ours(path: Path) -> Callable[[], object]:
    from recorder.checkpoints.readers import detect, load_state_dict

    info = detect(path)
    _, expected = load_state_dict(info, dtype="bf16")  # the commit's manifest

    def load() -> object:
        return load_state_dict(info, dtype="bf16", expected=expected)

    return load


def evict(path: Path) -> None:
    """Drop `path`'s files from the page cache, so the next load reads them from the disk."""
    for f in path.rglob("*"):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def measure(fn: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    out = time.perf_counter() - wall, time.process_time() - cpu
    del result
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gb", type=float, default=4.0, help="checkpoint size in GB (default 4)")
    ap.add_argument("--shards", type=int, default=8, help="shard files (default 8)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best of each is reported")
    ap.add_argument("--dir", type=Path, default=None, help="where the checkpoints go (default: a temp dir)")
    ap.add_argument("--cache", choices=("cold", "warm", "both"), default="cold", help="page cache state (default cold)")
    args = ap.parse_args()
    import warnings

    warnings.filterwarnings("ignore", message="torch.distributed is disabled")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        dcp_dir, hf_dir = write_checkpoints(Path(tmp), args.size_gb, args.shards)
        size = sum(f.stat().st_size for f in dcp_dir.iterdir())
        print(
            f"checkpoint: {size / 1e9:.2f} GB in {args.shards} shards, {os.cpu_count()} CPUs, "
            f"{args.rounds} rounds, load average {os.getloadavg()[0]:.2f}"
        )
        caches = ("cold", "warm") if args.cache == "both" else (args.cache,)
        for fmt, path, plain, checked in (("torch DCP", dcp_dir, plain_dcp(dcp_dir), ours(dcp_dir)),
                                          ("safetensors", hf_dir, plain_safetensors(hf_dir), ours(hf_dir))):  # fmt: skip
            for cache in caches:
                report(fmt, cache, best_of(args.rounds, path, cache, {"plain": plain, "checked": checked}))
        print(f"load average at the end {os.getloadavg()[0]:.2f}")


def best_of(
    rounds: int, path: Path, cache: str, loads: dict[str, Callable[[], object]]
) -> dict[str, tuple[float, float]]:
    """name -> (best wall, best CPU seconds) over `rounds` alternating rounds."""
    best: dict[str, tuple[float, float]] = {}
    if cache == "warm":
        for fn in loads.values():
            measure(fn)  # fills the page cache
    for _ in range(rounds):
        for name, fn in loads.items():
            if cache == "cold":
                evict(path)
            wall, cpu = measure(fn)
            prev = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(prev[0], wall), min(prev[1], cpu))
    return best


def report(fmt: str, cache: str, best: dict[str, tuple[float, float]]) -> None:
    (pw, pc), (cw, cc) = best["plain"], best["checked"]
    print(
        f"{fmt:11s} {cache:4s} plain {pw:7.3f} s wall {pc:7.3f} s CPU | checked {cw:7.3f} s wall {cc:7.3f} s CPU"
        f" | ratio {cw / pw:.2f}x wall {cc / pc:.2f}x CPU" + (" (target <= 1.10x)" if cache == "cold" else "")
    )


if __name__ == "__main__":
    main()
