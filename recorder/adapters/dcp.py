"""Import the torch.distributed.checkpoint (DCP) series an FSDP2 training job writes, as `weight_update` and
`checkpoint_committed` events (recorder.adapters.series_import).

Two layouts, each checkpoint one directory of `__R_0.distcp` shards (one per rank) and the `.metadata` DCP
writes last:

    ROOT/fsdp2_epoch_N/            an archive (format `dcp-archive`): final_meta.json (inside it, or beside it
                                   as the seed's archive directory keeps it) names its `source` (the training
                                   run directory) and may hold step, source_world_size and timing
    RUN/snapshots/step_N/          a snapshot (format `dcp-snapshot`): snapshot_meta.json optional (step,
                                   source_world_size, timing)

The meta files are found and read by the team layout's parser (recorder/checkpoints/torch_dcp/fsdp2_layout.py), which
zero-shot
uses too, so both commands read a checkpoint's meta from the same file.

A meta file's `step` wins over the directory's name; an archive's name (an epoch) gives none. Samples are
the meta's `samples_count` (or `consumed_samples`), else step x the global batch size (the meta's
`global_batch_size`, or the caller's). The weight-update time is the meta's `weight_update_ns`,
`weight_update_ms` or `timestamp` (Unix seconds), recorded with `timing: "meta"`; without one it is the
newest shard's modification time (`timing: "shard-mtime"`). Every checkpoint is fingerprinted by the function
the caller passes in (the CLI: recorder.checkpoints.fingerprinter's), which loads it, hashing each shard as it is
read: that manifest is the commit's, so `recorder verify` and `recorder eval` name any shard changed since.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from recorder.adapters.series_import import (
    Fingerprinter,
    SeriesCommit,
    left_out_warning,
    loaded_files,
    refuse_if_strict,
    step_problems,
    write_series,
    written_ns,
)
from recorder.checkpoints.torch_dcp.fsdp2_layout import (
    EPOCH,
    SNAPSHOT_META,
    STEP,
    TeamLayoutError,
    archive_meta,
    snapshot_meta,
)
from recorder.errors import DataError, InputError
from recorder.provenance import provenance
from recorder.rules import BENCHMARK, RULESET
from recorder.store.kinds import RunOpened, Timing
from recorder.store.run import RunDir
from recorder.untrusted.untrusted_files import first_irregular

SOURCE: Final = "fsdp2"
WRITER: Final = "import-dcp"
METADATA: Final = ".metadata"
Layout = Literal["dcp-archive", "dcp-snapshot"]
_NS = {"weight_update_ns": 1, "weight_update_ms": 1_000_000, "timestamp": 1_000_000_000}
_MAX_NS = 2**63 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class DcpLayout:
    """One of the layouts, a row each: how its checkpoints are found under the root and described."""

    format: Layout  # as its commits record it (a row of recorder.checkpoints.formats)
    pattern: re.Pattern[str]  # a checkpoint directory's name; its group: the number in it
    expected: str  # its checkpoint directories, as an error names them
    folder: Callable[[Path], Path]  # where they lie under the root given
    meta: Callable[[Path], tuple[Path, dict[str, Any]]]  # a checkpoint's meta file and its object
    name_is_step: bool  # the number in a directory's name is its step when the meta gives none


def _snapshots(root: Path) -> Path:
    return root if root.name == "snapshots" else root / "snapshots"


def _snapshot_meta(path: Path) -> tuple[Path, dict[str, Any]]:
    return path / SNAPSHOT_META, snapshot_meta(path, follow=False)


ARCHIVES = DcpLayout(
    format="dcp-archive",
    pattern=EPOCH,
    expected="fsdp2_epoch_N/",
    folder=lambda root: root,
    meta=lambda path: archive_meta(path, follow=False),  # required: final_meta.json
    name_is_step=False,  # an archive's name gives an epoch
)
SNAPSHOTS = DcpLayout(
    format="dcp-snapshot",
    pattern=STEP,
    expected="step_N/",
    folder=_snapshots,
    meta=_snapshot_meta,  # optional: snapshot_meta.json
    name_is_step=True,
)


class DcpImportError(InputError):
    """Base of the errors of a torch DCP checkpoint import."""


class DcpLayoutError(DcpImportError):
    """A checkpoint directory that lacks a file DCP or the job writes, or whose files disagree."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DcpCheckpoint:
    """One archive or snapshot, as its files describe it."""

    step: int
    path: Path
    samples: int
    weight_update_ns: int
    timing: Timing
    shards: tuple[Path, ...]  # `.metadata` and the `*.distcp` files
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DcpImportReport:
    run: RunDir
    layout: Layout
    checkpoints: list[DcpCheckpoint]
    global_batch_size: int
    problems: list[str]
    evaluated: bool  # the run already holds evaluation results
    warnings: list[str] = field(default_factory=list)  # shard files left out of a manifest, named


def layout_of(root: Path) -> DcpLayout | None:
    """Which DCP layout `root` holds: archives in it, snapshots in it or in its `snapshots/`; None if neither."""
    if not root.is_dir():
        return None
    if any(EPOCH.fullmatch(p.name) and p.is_dir() for p in root.iterdir()):
        return ARCHIVES
    if root.name == "snapshots" or (root / "snapshots").is_dir():
        return SNAPSHOTS
    return None


def discover(root: Path, layout: DcpLayout) -> list[Path]:
    """The checkpoint directories of `layout` under `root`, by the number in their name."""
    where, pattern = layout.folder(root), layout.pattern
    found = [(int(m.group(1)), p) for p in where.iterdir() if p.is_dir() and (m := pattern.fullmatch(p.name))]
    if not found:
        raise DcpLayoutError(
            f"{where}: no {layout.expected} checkpoint directories: point at the folder that holds them"
        )
    for _, p in found:  # before a byte is read: every checkpoint a plain tree of the series' own files
        why = first_irregular(p)
        if why is not None:
            raise DcpLayoutError(f"{why}: refused in a checkpoint series (every shard a regular file in it)")
    return [p for _, p in sorted(found)]


def read_checkpoint(path: Path, layout: DcpLayout, gbs: int | None) -> DcpCheckpoint:
    """Read and check one archive or snapshot; `gbs` (samples per step) when the caller gave it."""
    shards = _shards(path)
    meta_path, meta = _meta(path, layout)
    _check_source(meta, meta_path, path)
    step = _step(meta, meta_path, path, layout)
    stated = _int(meta, ("global_batch_size",), meta_path)
    if gbs is not None and stated is not None and gbs != stated:
        raise DcpLayoutError(
            f"{meta_path}: global_batch_size is {stated}, --global-batch-size {gbs}: leave the option out, or "
            "correct the file if it is the one that is wrong"
        )
    samples = _int(meta, ("samples_count", "consumed_samples"), meta_path)
    if samples is None:
        per_step = gbs or stated
        if per_step is None:
            raise DcpLayoutError(
                f"{meta_path}: neither samples_count nor global_batch_size says how many samples step {step} "
                "consumed: pass --global-batch-size (samples per step)"
            )
        samples = step * per_step
    update_ns = _meta_time(meta, meta_path)
    timing: Timing = "meta" if update_ns is not None else "shard-mtime"
    return DcpCheckpoint(
        step=step,
        path=path,
        samples=samples,
        weight_update_ns=update_ns if update_ns is not None else written_ns(list(shards)),
        timing=timing,
        shards=shards,
        meta=meta,
    )


def _shards(path: Path) -> tuple[Path, ...]:
    metadata = path / METADATA
    if not metadata.is_file():
        raise DcpLayoutError(
            f"{metadata}: missing (torch.distributed.checkpoint writes it when every shard is saved): the save "
            f"did not finish; save it again or move {path.name} out of the series"
        )
    distcp = sorted(path.glob("*.distcp"))
    if not distcp:
        raise DcpLayoutError(f"{path}: no *.distcp shards beside {METADATA}: save the checkpoint again")
    return (metadata, *distcp)


def _meta(path: Path, layout: DcpLayout) -> tuple[Path, dict[str, Any]]:
    """(the meta file, its object): an archive's final_meta.json (required), a snapshot's snapshot_meta.json."""
    try:  # a regular file of at most JSON_LIMIT: a FIFO, a symlink or a sparse giant is named, never read
        return layout.meta(path)
    except TeamLayoutError as e:
        raise DcpLayoutError(str(e)) from e


def _check_source(meta: dict[str, Any], meta_path: Path, path: Path) -> None:
    source = meta.get("source")
    if source is None:
        return
    if not isinstance(source, str) or not source:
        raise DcpLayoutError(f"{meta_path}: source must name the training run directory, got {source!r}")
    run = Path(source) if Path(source).is_absolute() else path.parent / source
    if not run.is_dir():
        raise DcpLayoutError(
            f"{meta_path}: source {source} does not exist: the training run (its config.json and tokenizer) "
            "was moved or deleted; set source to where it is now"
        )


def _int(meta: dict[str, Any], keys: tuple[str, ...], meta_path: Path) -> int | None:
    key = next((k for k in keys if k in meta), None)
    if key is None:
        return None
    value = meta[key]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= _MAX_NS:
        raise DcpLayoutError(f"{meta_path}: {key} must be a positive integer, got {value!r}")
    return value


def _step(meta: dict[str, Any], meta_path: Path, path: Path, layout: DcpLayout) -> int:
    step = _int(meta, ("step",), meta_path)
    if step is not None:
        return step
    named = layout.pattern.fullmatch(path.name) if layout.name_is_step else None
    if named is not None:
        return int(named.group(1))
    raise DcpLayoutError(f'{meta_path}: no step (an archive\'s name gives an epoch, not a step): add "step": N')


def _meta_time(meta: dict[str, Any], meta_path: Path) -> int | None:
    key = next((k for k in _NS if k in meta), None)
    if key is None:
        return None
    value = meta[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise DcpLayoutError(f"{meta_path}: {key} must be a positive number, got {value!r}")
    ns = int(value * _NS[key]) if isinstance(value, float) else value * _NS[key]
    if ns > _MAX_NS:
        raise DcpLayoutError(f"{meta_path}: {key} {value} is later than the recorder can store")
    return ns


def import_checkpoints(
    root: Path,
    into: Path,
    *,
    fingerprint: Fingerprinter,
    global_batch_size: int | None = None,
    writer: str = WRITER,
    strict: bool = False,
) -> DcpImportReport:
    """Append a weight_update and a checkpoint_committed per archive or snapshot under `root` to the run
    `into` (created if missing), with run_opened for a new run and train_stop at the final checkpoint.

    Everything is read, and every checkpoint loaded and fingerprinted, before anything is written."""
    layout = layout_of(root)
    if layout is None:
        raise DcpLayoutError(f"{root}: neither fsdp2_epoch_N/ archives nor a snapshots/ folder")
    checkpoints = sorted(
        (read_checkpoint(p, layout, global_batch_size) for p in discover(root, layout)), key=lambda c: c.step
    )
    _check_distinct(checkpoints)
    gbs = _series_gbs(checkpoints, global_batch_size)
    problems = step_problems([(c.step, c.samples) for c in checkpoints], gbs, "were they deleted?")
    refuse_if_strict(root, problems, strict)
    made = [_series_commit(c, layout, fingerprint) for c in checkpoints]
    run, kinds = write_series(into, writer, _run_opened(checkpoints[0], gbs, layout), [c for c, _ in made])
    warnings = [w for _, ws in made for w in ws]
    # as committed: a shard-mtime weight update dated by the manifest's shards only
    checkpoints = [replace(c, weight_update_ns=m.weight_update_ns) for c, (m, _) in zip(checkpoints, made, strict=True)]
    return DcpImportReport(run, layout.format, checkpoints, gbs, problems, "eval_result" in kinds, warnings)


def _check_distinct(checkpoints: list[DcpCheckpoint]) -> None:
    for a, b in zip(checkpoints, checkpoints[1:], strict=False):
        if a.step == b.step:
            raise DcpLayoutError(f"{a.path} and {b.path} both hold step {a.step}: move one out of the series")


def _series_gbs(checkpoints: list[DcpCheckpoint], given: int | None) -> int:
    """The caller's global batch size, else the meta's, else the first step's samples per step."""
    if given is not None:
        return given
    first = checkpoints[0]
    gbs = first.meta.get("global_batch_size")
    if isinstance(gbs, int) and not isinstance(gbs, bool) and gbs > 0:
        return gbs
    if first.samples % first.step:
        raise DcpLayoutError(
            f"{first.path}: {first.samples} samples after step {first.step} give no whole global batch size: "
            "pass --global-batch-size (samples per step)"
        )
    return first.samples // first.step


def _series_commit(c: DcpCheckpoint, layout: DcpLayout, fingerprint: Fingerprinter) -> tuple[SeriesCommit, list[str]]:
    try:
        record, manifest = fingerprint(c.path)
    except DataError as e:
        raise DcpLayoutError(f"{c.path}: its weights cannot be loaded to fingerprint: {e}") from e
    if manifest is None:  # the loader hashes every shard it reads: a DCP load always gives one
        raise DcpLayoutError(f"{c.path}: the fingerprint function gave no manifest of the shards it read")
    # the config.json and tokenizer files loading read (from the archive's source run): hashed into the commit
    loaded = loaded_files(manifest)
    manifest = loaded.manifest
    shards = [c.path / s["path"] for s in manifest["shards"]]  # a file left out does not date the save
    update_ns = written_ns(shards) if c.timing == "shard-mtime" else c.weight_update_ns
    commit = SeriesCommit(
        step=c.step,
        samples=c.samples,
        path=c.path,
        weight_update_ns=update_ns,
        save_end_ns=max(written_ns(shards), update_ns),
        sha256=manifest["root"],
        bytes=sum(s["bytes"] for s in manifest["shards"]),
        fingerprint=record,
        format=layout.format,
        dtype=_dtype(c.meta),
        source=SOURCE,
        manifest=manifest,
        timing=c.timing,
        files=loaded.files,
    )
    return commit, ([left_out_warning(c.path, loaded.left_out)] if loaded.left_out else [])


def _dtype(meta: dict[str, Any]) -> str | None:
    dtype = meta.get("dtype")
    return dtype if isinstance(dtype, str) else None


def _run_opened(first: DcpCheckpoint, gbs: int, layout: DcpLayout) -> RunOpened:
    world = first.meta.get("source_world_size")
    config = {
        "layout": layout.format,
        "global_batch_size": gbs,
        "source_world_size": world if isinstance(world, int) else len(first.shards) - 1,
        "meta": first.meta,
    }
    return RunOpened(
        benchmark=BENCHMARK,
        ruleset=RULESET,
        division=None,
        global_batch_size=gbs,
        config=config,
        provenance=provenance(),
        resumed_from=None,
        source=SOURCE,
    )
