"""A checkpoint's state dict, every shard hashed while it is read: one read serves the digest and the load.

Each shard is read once, into memory of our own, and hashed block by block as it arrives; if it is the one
`expected` names, its tensors are views of the same bytes, nothing copied: a safetensors tensor by its
header, a DCP chunk by its torch.save archive (recorder/checkpoints/torch_dcp/torch_save_view.py; alike chunks,
such as a layer's experts, are gathered once into one tensor per batch: dcp_chunks.py). One thread per
shard: reads and hashlib release the GIL. A shard that differs
from `expected` (size or sha256), one that is missing and one the manifest does not name each raise
CheckpointError naming the shard, before any of its bytes are parsed. DCP is read without a process group:
the allow-listed `.metadata` says where every tensor chunk lies, and each chunk's pickle is read through an
allow list too.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import stat
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recorder.checkpoints.detect import DCP_METADATA, CheckpointInfo
from recorder.checkpoints.hugging_face.safetensors_header import HeaderError, header_length, parse_header
from recorder.checkpoints.manifest import Manifest, ShardDigest
from recorder.checkpoints.megatron.megatron_saves import UnfinishedSaveError
from recorder.checkpoints.torch_dcp.dcp_listing import SHARD_SUFFIX, split_shards
from recorder.untrusted.copy_temp_files import is_copy_temp
from recorder.untrusted.tree_walk import walk
from recorder.untrusted.untrusted_files import kind_of
from trainer.policy.errors import CheckpointError, ShardMismatchError

if TYPE_CHECKING:
    import torch


class ShardsMissingError(ShardMismatchError, UnfinishedSaveError):
    """A `.metadata` that places tensors in a shard file that is not there: the save did not finish (or a
    shard was removed since)."""


READ_BLOCK = 4 << 20  # fits a server CPU's cache: hashed before it is evicted
DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
# Everything a training checkpoint holds besides the model: never loaded into the evaluated model.
NOT_MODEL = ("optim", "optimizer", "lr_scheduler", "rng_state", "dataloader", "extra_state")
_SAFETENSORS_DTYPES = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64", "I32": "int32",
    "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
}  # fmt: skip


def torch_dtype(dtype: torch.dtype | str) -> torch.dtype:
    """`dtype` as a torch.dtype: "bf16", "fp32", "fp16" or a torch.dtype."""
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise CheckpointError(f"dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    result: torch.dtype = getattr(torch, DTYPES[dtype])
    return result


def safetensors_file(info: CheckpointInfo) -> list[Path]:
    """The recorder's own checkpoint: its one model.safetensors."""
    return [info.weights_dir / "model.safetensors"]


def safetensors_files(info: CheckpointInfo) -> list[Path]:
    """A directory's safetensors files (a team's epoch directory: its weights, with no config.json)."""
    return sorted(info.weights_dir.glob("*.safetensors"))


def hf_files(info: CheckpointInfo) -> list[Path]:
    """A Hugging Face directory's safetensors files (one, or the shards its index names)."""
    from recorder.checkpoints.hugging_face.hf_checkpoint import find_dirs

    return list(find_dirs(info.path).weights)


def dcp_files(info: CheckpointInfo) -> list[Path]:
    """A torch DCP checkpoint: `.metadata` and every `*.distcp` shard it names (dcp_listing)."""
    return sorted(split_shards(_dcp_candidates(info))[0])


def every_file(info: CheckpointInfo) -> list[Path]:
    """Every file under the weights directory, as the NeMo-RL import hashes a Megatron checkpoint (its
    common.pt and metadata.json with the shards), but a `*.distcp` file no `.metadata` beside it names."""
    return split_shards(_weight_files(info))[0]


def dcp_left_out(info: CheckpointInfo) -> list[Path]:
    """The `*.distcp` files in a DCP checkpoint that no `.metadata` names: not read, not hashed, not in the
    manifest."""
    return split_shards(_dcp_candidates(info))[1]


def every_file_left_out(info: CheckpointInfo) -> list[Path]:
    """The `*.distcp` files under a Megatron-Core checkpoint's weights that no `.metadata` names, and the
    copy tools' temporary files there (recorder.untrusted.copy_temp_files)."""
    return sorted(split_shards(_weight_files(info))[1] + _copy_temps(info))


def none_left_out(info: CheckpointInfo) -> list[Path]:
    """A format whose listing leaves no file out (a safetensors directory reads what it names)."""
    return []


def _weight_files(info: CheckpointInfo) -> list[Path]:
    """Every file under the weights directory but those of the iteration folders passed over and the copy
    tools' temporary files (never part of a checkpoint: left out, and named)."""
    return [f for f in _every_weight_file(info) if not is_copy_temp(f.relative_to(info.weights_dir))]


def _copy_temps(info: CheckpointInfo) -> list[Path]:
    return [f for f in _every_weight_file(info) if is_copy_temp(f.relative_to(info.weights_dir))]


def _every_weight_file(info: CheckpointInfo) -> list[Path]:
    return [f for f in _walk(info.weights_dir) if not any(f.is_relative_to(p) for p in info.passed_over)]


def _dcp_candidates(info: CheckpointInfo) -> list[Path]:
    return sorted([info.weights_dir / DCP_METADATA, *info.weights_dir.glob("*" + SHARD_SUFFIX)])


def _walk(directory: Path) -> list[Path]:
    """Every file under `directory`, walked without following a link (`recorder.untrusted.tree_walk`, bounded in
    depth); CheckpointError naming the first entry
    that is neither a file nor a folder (a FIFO would block its reader, a device never end, a symlink could
    loop or lead out of the checkpoint)."""
    found: list[Path] = []
    for entry in walk(directory):
        if not entry.is_file(follow_symlinks=False):
            mode = entry.stat(follow_symlinks=False).st_mode
            raise CheckpointError(
                f"{entry.path}: {kind_of(mode)} among the weights, not a regular file: refused (remove it, "
                "or replace a link with the file it names)"
            )
        found.append(Path(entry.path))
    return sorted(found)


def read_safetensors(
    info: CheckpointInfo, files: list[Path], expected: Manifest | None, dtype: torch.dtype, threads: int | None
) -> tuple[dict[str, Any], tuple[ShardDigest, ...]]:
    """Safetensors files: each parsed from its bytes (the header is JSON; nothing unpickled)."""
    read = read_shards(info, files, expected, lambda buf, path: _safetensors(buf, path, dtype), threads)
    state = {k: v for _, part in read.values() for k, v in part.items()}
    return state, tuple(d for d, _ in read.values())


def read_mcore(
    info: CheckpointInfo, files: list[Path], expected: Manifest | None, dtype: torch.dtype, threads: int | None
) -> tuple[dict[str, Any], tuple[ShardDigest, ...]]:
    """Megatron-Core torch_dist: a DCP checkpoint whose names are mapped to the Hugging Face model's."""
    from recorder.checkpoints.detect import require_config
    from recorder.checkpoints.megatron.mcore_names import to_hf

    state, digests = read_dcp(info, files, expected, dtype, threads)
    metadata = min((f for f in files if f.name == DCP_METADATA), key=lambda f: len(f.parts))  # read_dcp's
    return to_hf(state, require_config(info), where=metadata), digests


def _rel(info: CheckpointInfo, path: Path) -> str:
    return path.relative_to(info.weights_dir).as_posix()


def check_listing(info: CheckpointInfo, files: list[Path], expected: Manifest | None) -> None:
    """Before reading a byte: every shard `expected` names is there with its size, and no other."""
    if expected is None:
        return
    present = {_rel(info, f): f for f in files}
    for shard in expected.shards:
        f = present.get(shard.path)
        if f is None:
            raise ShardMismatchError(
                f"{info.weights_dir / shard.path}: shard missing: the checkpoint was committed with it; "
                "it was deleted or moved after training committed it; it is not scored"
            )
        if f.stat().st_size != shard.bytes:
            raise ShardMismatchError(
                f"{f}: shard has {f.stat().st_size} bytes, committed with {shard.bytes}: it was altered after "
                "training committed it; it is not scored"
            )
    extra = sorted(set(present) - {s.path for s in expected.shards})
    if extra:
        raise ShardMismatchError(
            f"{info.weights_dir / extra[0]}: shard not in the committed manifest"
            + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else "")
            + ": files were added after training committed it; it is not scored"
        )


def read_shards(
    info: CheckpointInfo,
    files: list[Path],
    expected: Manifest | None,
    parse: Callable[[memoryview, Path], Any] | None,
    threads: int | None,
) -> dict[str, tuple[ShardDigest, Any]]:
    """rel path -> (its digest, `parse` of its bytes), each shard read, hashed and checked, then parsed, in one
    thread. The bytes are read into memory of our own, which the parsed tensors view; `parse` None: only
    hashed, through one small buffer."""

    def checked(path: Path, size: int, sha: str) -> ShardDigest:
        digest = ShardDigest(_rel(info, path), size, sha)
        want = expected.get(digest.path) if expected is not None else None
        if want is not None and want != digest:
            raise ShardMismatchError(
                f"{path}: shard sha256 is {digest.sha256[:16]}..., committed {want.sha256[:16]}...: it was "
                "altered after training committed it; it is not scored"
            )
        return digest

    def one(path: Path) -> tuple[ShardDigest, Any]:
        buf, sha = _read_hashed(path, keep=parse is not None)
        digest = checked(path, os.path.getsize(path) if buf is None else len(buf), sha)
        return digest, None if parse is None or buf is None else parse(buf, path)

    workers = threads or min(len(files), os.cpu_count() or 1, 16) or 1
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="shard") as pool:
        results = list(pool.map(one, files))
    return {d.path: (d, parsed) for d, parsed in results}


def _read_hashed(path: Path, *, keep: bool) -> tuple[memoryview | None, str]:
    """(the file's bytes in memory of our own, or None when not `keep`; its sha256), read once: each block is
    hashed as it arrives, while it is still in the CPU's cache, and the kernel reads ahead meanwhile."""
    try:
        # never blocks on a FIFO; anything but a regular file is refused before a byte is read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise CheckpointError(f"{path}: {kind_of(mode)}, not a regular file: refused as a shard")
        with open(fd, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            if hasattr(os, "posix_fadvise"):  # a larger read-ahead window: not on every platform
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
            # anonymous memory: pages are zeroed as they are first written, never in a pass of their own
            whole = memoryview(mmap.mmap(-1, size)) if keep and size else None
            block = None if whole is not None else memoryview(bytearray(min(size, READ_BLOCK)))
            h, pos = hashlib.sha256(), 0
            while pos < size:
                into = whole[pos : pos + READ_BLOCK] if whole is not None else block
                assert into is not None
                n = f.readinto(into[: size - pos])
                if not n:
                    raise CheckpointError(f"{path}: the shard ended at byte {pos} of {size}: it changed while read")
                h.update(into[:n])
                pos += n
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read the shard ({e.strerror})") from e
    return (whole if whole is not None else memoryview(b"") if keep else None), h.hexdigest()


def _safetensors(buf: memoryview, path: Path, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The tensors of one safetensors file, parsed from its bytes (the header is JSON; nothing unpickled),
    every bound checked by `recorder.checkpoints.hugging_face.safetensors_header.parse_header` before a tensor is
    viewed."""
    import torch

    try:
        length = header_length(path, bytes(buf[:8]), len(buf))
        header = parse_header(path, bytes(buf[8 : 8 + length]), len(buf))
    except HeaderError as e:
        raise CheckpointError(str(e)) from e
    out = {}
    for name, (kind_name, shape) in header.tensors.items():
        if kind_name not in _SAFETENSORS_DTYPES:
            raise CheckpointError(f"{path}: tensor {name!r} is {kind_name}, a dtype the loader does not read")
        kind = getattr(torch, _SAFETENSORS_DTYPES[kind_name])
        begin, end = header.offsets[name]
        count = (end - begin) // kind.itemsize
        view = (
            torch.frombuffer(buf, dtype=kind, count=count, offset=header.data_start + begin)
            if count
            else torch.empty(0, dtype=kind)
        )
        out[name] = _as(view.reshape(shape), dtype)
    return out


def _as(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`t`, a floating one in `dtype` (a view of the shard's buffer where it already is: nothing copied)."""
    return t.to(dtype) if t.is_floating_point() else t


def read_dcp(
    info: CheckpointInfo, files: list[Path], expected: Manifest | None, dtype: torch.dtype, threads: int | None
) -> tuple[dict[str, Any], tuple[ShardDigest, ...]]:
    """(the model tensors, the digests of every file read). The
    `.metadata` is read (and hashed) first; then each shard's thread reads the chunks it holds (a batch of
    alike archives at a time: dcp_chunks), and tensors cut across chunks or shards (FSDP's dim-0 shards, the
    experts) are put together afterwards."""
    from recorder.checkpoints.torch_dcp import dcp_chunks
    from recorder.checkpoints.torch_dcp.safe_metadata import shared_metadata

    metas = [f for f in files if f.name == DCP_METADATA]
    meta_file = min(metas, key=lambda f: len(f.parts), default=None)
    if meta_file is None:
        raise CheckpointError(f"{info.weights_dir}: no {DCP_METADATA}: a torch distributed checkpoint needs it")
    read = read_shards(info, [meta_file], expected, lambda buf, path: shared_metadata(path, bytes(buf)), 1)
    metadata = read[_rel(info, meta_file)][1]
    read[_rel(info, meta_file)] = (read[_rel(info, meta_file)][0], None)
    chunks = dcp_chunks.plan(meta_file, metadata, lambda fqn: not _not_model(fqn))
    missing = sorted(set(chunks.shards) - set(files))
    if missing:
        raise ShardsMissingError(f"{missing[0]}: shard missing: {meta_file} places tensors in it")
    dcp_chunks.check_declared(chunks, {f: os.path.getsize(f) for f in chunks.shards})

    def parse(buf: memoryview, path: Path) -> dcp_chunks.ShardRead | None:
        shard = chunks.shards.get(path)
        return None if shard is None else dcp_chunks.read_shard(buf, path, shard, chunks)

    rest = [f for f in files if f != meta_file]
    read |= read_shards(info, rest, expected, parse, threads)
    shards = {f: read[_rel(info, f)][1] for f in chunks.shards}
    return dcp_chunks.assemble(chunks, shards, dtype), tuple(d for d, _ in read.values())


def _not_model(fqn: str) -> bool:
    return fqn.split(".", 1)[0] in NOT_MODEL or fqn.endswith("_extra_state")
