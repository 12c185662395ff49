"""A pretraining team's checkpoints where its training wrote them (docs/zero-shot.md, "A team's run"):

    <run>/all_config.yaml, <run>/train_metadata.yaml, <run>/tensorboard_scalars.json
    <run>/fsdp2_epoch_N/                 DCP {model, optim, step}: PATH <run> loads the largest N (or --epoch)
    <run>/snapshots/step_N/              DCP + snapshot_meta.json {"step": N, ...}
    <archive>/fsdp2_epoch_N/ + <archive>/final_meta.json {"source": <run>, "step": S, ...}

The training world size is the meta's `source_world_size` (a model-only export), else the number of
`__R_0.distcp` shards. An epoch's step is its meta's, else the `step` the checkpoint itself holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evaluator.zero_shot.errors import ZeroShotInputError

ALL_CONFIG = "all_config.yaml"
TRAIN_METADATA = "train_metadata.yaml"
SNAPSHOT_META = "snapshot_meta.json"
FINAL_META = "final_meta.json"
DCP_METADATA = ".metadata"
EPOCH = re.compile(r"fsdp2_epoch_(\d+)")
STEP = re.compile(r"step_0*(\d+)")
SHARD = re.compile(r"__(\d+)_0\.distcp")
TeamKind = Literal["run", "snapshot", "archive"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamCheckpoint:
    """One of the team's checkpoints: the PATH given, the DCP directory loaded, its run and config."""

    kind: TeamKind
    path: Path
    dcp: Path
    run: Path
    config_dir: Path
    epoch: int | None
    step: int | None
    world_size: int | None

    @property
    def label(self) -> str:
        """project/run/epoch_N or project/run/step_N: unique across runs, epochs and snapshots."""
        which = f"step_{self.step}" if self.kind == "snapshot" or self.epoch is None else f"epoch_{self.epoch}"
        return f"{self.run.parent.name}/{self.run.name}/{which}"


def find(path: Path, *, epoch: int | None = None, config_dir: Path | None = None) -> TeamCheckpoint | None:
    """The team checkpoint at `path`, or None when `path` is none of the team's layouts."""
    path = path.resolve()
    if _is_dcp(path) and path.parent.name == "snapshots":
        run = path.parent.parent
        if not (_meta(path, SNAPSHOT_META) or (run / ALL_CONFIG).is_file() or config_dir is not None):
            return None
        return _checkpoint("snapshot", path, path, run, config_dir, None, _meta(path, SNAPSHOT_META))
    m = EPOCH.fullmatch(path.name)
    if _is_dcp(path) and m is not None:
        if (path.parent / FINAL_META).is_file():
            return _archive(path.parent, path, config_dir)
        if (path.parent / ALL_CONFIG).is_file() or config_dir is not None:
            return _checkpoint("run", path, path, path.parent, config_dir, int(m.group(1)), _meta(path))
        return None
    epochs = _epochs(path)
    if not epochs or _is_dcp(path):
        return None
    if (path / FINAL_META).is_file():
        return _archive(path, _pick(path, epochs, epoch), config_dir)
    dcp = _pick(path, epochs, epoch)
    return _checkpoint("run", path, dcp, path, config_dir, _epoch_of(dcp), _meta(dcp))


def _archive(archive: Path, dcp: Path, config_dir: Path | None) -> TeamCheckpoint:
    meta = _read_json(archive / FINAL_META)
    source = meta.get("source")
    if not isinstance(source, str) or not source:
        raise ZeroShotInputError(f"{archive / FINAL_META}: no `source` naming the run directory: add it")
    run = (archive / source).resolve()
    if not run.is_dir() and config_dir is None:
        raise ZeroShotInputError(
            f"{archive / FINAL_META}: source {source!r} ({run}) does not exist: restore the run there, set "
            "`source` to where it is now, or pass --config-dir"
        )
    return _checkpoint("archive", archive, dcp, run, config_dir, _epoch_of(dcp), meta | _meta(dcp))


def _checkpoint(
    kind: TeamKind, path: Path, dcp: Path, run: Path, config_dir: Path | None, epoch: int | None, meta: dict[str, Any]
) -> TeamCheckpoint:
    step = _int(meta.get("step"))
    if step is None and kind == "snapshot":
        m = STEP.fullmatch(dcp.name)
        step = int(m.group(1)) if m else None
    if step is None:
        step = saved_step(dcp)
    world = _int(meta.get("source_world_size")) or sum(1 for p in dcp.iterdir() if SHARD.fullmatch(p.name)) or None
    where = (config_dir or run).resolve()
    if not (where / ALL_CONFIG).is_file():
        how = "--config-dir" if config_dir is not None else "the run directory"
        raise ZeroShotInputError(
            f"{where / ALL_CONFIG}: no such file ({how}): pass --config-dir DIR holding the run's "
            f"{ALL_CONFIG} and {TRAIN_METADATA}"
        )
    return TeamCheckpoint(
        kind=kind, path=path, dcp=dcp, run=run, config_dir=where, epoch=epoch, step=step, world_size=world
    )


def _epochs(path: Path) -> dict[int, Path]:
    if not path.is_dir():
        return {}
    found = {int(m.group(1)): p for p in path.iterdir() if (m := EPOCH.fullmatch(p.name)) and _is_dcp(p)}
    return dict(sorted(found.items()))


def _pick(path: Path, epochs: dict[int, Path], epoch: int | None) -> Path:
    if epoch is None:
        return epochs[max(epochs)]
    if epoch not in epochs:
        have = ", ".join(str(e) for e in epochs)
        raise ZeroShotInputError(f"{path}: no fsdp2_epoch_{epoch} (--epoch / CKPT_EPOCH); epochs here: {have}")
    return epochs[epoch]


def _epoch_of(dcp: Path) -> int | None:
    m = EPOCH.fullmatch(dcp.name)
    return int(m.group(1)) if m else None


def _is_dcp(path: Path) -> bool:
    return (path / DCP_METADATA).is_file()


def _meta(dcp: Path, *names: str) -> dict[str, Any]:
    """The first of the DCP directory's own meta files (an export's), as a dict."""
    for name in names or (SNAPSHOT_META, FINAL_META):
        if (dcp / name).is_file():
            return _read_json(dcp / name)
    return {}


def _read_json(path: Path) -> dict[str, Any]:
    from recorder.untrusted_files import IrregularFileError, read_json

    try:
        doc = read_json(path, follow=True)  # bounded, regular files only: a FIFO or /dev/zero is refused
    except (OSError, IrregularFileError) as e:
        raise ZeroShotInputError(f"{path}: not a readable JSON file ({e}): rewrite it") from e
    if not isinstance(doc, dict):
        raise ZeroShotInputError(f"{path}: expected a JSON object")
    return doc


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def saved_step(dcp: Path) -> int | None:
    """The `step` entry the checkpoint holds beside model and optimizer (a pickled int), or None."""
    from recorder.untrusted_files import read_bounded
    from trainer.policy.checkpoints.safe_metadata import MAX_METADATA_BYTES, load_metadata
    from trainer.policy.checkpoints.torch_save_view import TorchSaveError, view_number

    meta_file = dcp / DCP_METADATA
    metadata = load_metadata(meta_file, read_bounded(meta_file, MAX_METADATA_BYTES, "DCP .metadata", follow=True))
    where = next((si for index, si in metadata.storage_data.items() if index.fqn == "step"), None)
    if where is None or not 0 < where.length <= 1 << 20:  # a pickled number is a few hundred bytes
        return None
    with open(dcp / where.relative_path, "rb") as f:
        f.seek(where.offset)
        raw = f.read(where.length)
    try:
        value: int | float | None = view_number(memoryview(raw), 0, len(raw))
    except TorchSaveError:  # a step that is not a plain number is no step: the caller asks for one
        return None
    return _int(value)
