"""A pretraining team's checkpoint layouts, with the file names its training writes (the zero-shot seed's):

    <run>/all_config.yaml, <run>/train_metadata.yaml, <run>/tensorboard_scalars.json
    <run>/fsdp2_epoch_N/                 DCP {model, optim, step}; epoch_meta.json {"step": S, ...} if written
    <run>/snapshots/step_N/              DCP + snapshot_meta.json {"step": N, "source_world_size": W, ...}
    <archive>/fsdp2_epoch_N/ + <archive>/final_meta.json {"source": <run, relative to the archive>, "step": S}

The one owner of the FSDP2/DCP layout: its meta file names, the epoch (`fsdp2_epoch_N`) and step (`step_N`)
folder patterns and the step folder a run's own checkpoints and results are written to (`step_dir`). One
parser for every reader: `recorder import-checkpoints` (recorder/adapters/dcp.py), `recorder zero-shot`
(evaluator/zero_shot/origin/team_run.py) and checkpoint detection (recorder/checkpoints/detect.py). It reads the
JSON metas only (bounded, regular files); the step a DCP checkpoint holds inside is the evaluator's to read,
since that needs the checkpoint library. tests/layout/test_fsdp2_layout.py refuses these names spelled elsewhere.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from recorder.errors import InputError
from recorder.untrusted.untrusted_files import IrregularFileError, read_json

ALL_CONFIG = "all_config.yaml"
TRAIN_METADATA = "train_metadata.yaml"
SNAPSHOT_META = "snapshot_meta.json"
FINAL_META = "final_meta.json"
EPOCH_META = "epoch_meta.json"
PLAIN_RUN_CONFIG = "training.json"  # a plain FSDP2 training run's settings, beside its snapshots/
RUN_META = "meta.json"  # a plain FSDP2 training run's own meta, beside the DCP shards at its root
OLD_SNAPSHOT_META = RUN_META  # in a snapshot, a name the seed does not use: refused, naming the seed's
# A DCP directory's meta files, in the order detection asks them: an archive's, a snapshot's, an epoch's, a run's.
META_FILES = (FINAL_META, SNAPSHOT_META, EPOCH_META, RUN_META)
DCP_METADATA = ".metadata"
EPOCH = re.compile(r"fsdp2_epoch_(\d+)")
STEP = re.compile(r"step_0*(\d+)")
STEP_DIR = "step_{:07d}"  # a step's folder as the recorder writes it: its checkpoints, its results
SHARD = re.compile(r"__(\d+)_0\.distcp")
TeamKind = Literal["run", "snapshot", "archive"]


STEP_KEYS = ("step", "global_step")  # the spellings read undeclared; two that disagree are refused


class TeamLayoutError(InputError):
    """A team checkpoint whose files are missing, unreadable or disagree."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutNames:
    """The names a team's training gives its epoch meta file and its step key (declared, else the defaults),
    and where a relative archive `source` is looked up after the archive itself (the team's root)."""

    epoch_meta: str = EPOCH_META
    step_keys: tuple[str, ...] = STEP_KEYS
    bases: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamCheckpoint:
    """One of the team's checkpoints: the PATH given, the DCP directory, its run and config directory, and
    the step and world size with the file each came from (None: no file said it)."""

    kind: TeamKind
    path: Path
    dcp: Path
    run: Path
    config_dir: Path
    epoch: int | None
    step: int | None
    step_from: str | None
    world_size: int | None
    world_from: str | None

    @property
    def label(self) -> str:
        """project/run/epoch_N or project/run/step_N: unique across runs, epochs and snapshots."""
        which = f"step_{self.step}" if self.kind == "snapshot" or self.epoch is None else f"epoch_{self.epoch}"
        return f"{self.run.parent.name}/{self.run.name}/{which}"


def find(
    path: Path, *, epoch: int | None = None, config_dir: Path | None = None, names: LayoutNames | None = None
) -> TeamCheckpoint | None:
    """The team checkpoint at `path`, or None when `path` is none of the team's layouts."""
    path, names = path.resolve(), names or LayoutNames()
    if is_dcp(path) and path.parent.name == "snapshots":
        run = path.parent.parent
        meta = snapshot_meta(path)
        told = (run / ALL_CONFIG).is_file() or config_dir is not None
        # a plain FSDP2 training run (evaluator/zero_shot/origin/training_run.py) writes snapshot_meta.json too; its
        # training.json, where a team run has all_config.yaml, says which layout the snapshot belongs to
        if not told and (not meta or (run / PLAIN_RUN_CONFIG).is_file()):
            return None
        return _checkpoint("snapshot", path, path, run, config_dir, None, [(path / SNAPSHOT_META, meta)], names)
    m = EPOCH.fullmatch(path.name)
    if is_dcp(path) and m is not None:
        if (path.parent / FINAL_META).is_file():
            return _archive(path.parent, path, config_dir, names)
        if (path.parent / ALL_CONFIG).is_file() or config_dir is not None:
            metas = _epoch_metas(path, names)
            return _checkpoint("run", path, path, path.parent, config_dir, int(m.group(1)), metas, names)
        return None
    epochs = epochs_in(path)
    if not epochs or is_dcp(path):
        return None
    if (path / FINAL_META).is_file():
        return _archive(path, _pick(path, epochs, epoch), config_dir, names)
    dcp = _pick(path, epochs, epoch)
    return _checkpoint("run", path, dcp, path, config_dir, epoch_of(dcp), _epoch_metas(dcp, names), names)


def snapshot_meta(dcp: Path, *, follow: bool = True) -> dict[str, Any]:
    """A snapshot's snapshot_meta.json ({} when there is none); a `meta.json` in its place is refused."""
    if not os.path.lexists(dcp / SNAPSHOT_META) and os.path.lexists(dcp / OLD_SNAPSHOT_META):
        raise TeamLayoutError(
            f"{dcp / OLD_SNAPSHOT_META}: a snapshot's meta file is {SNAPSHOT_META} (as the training writes it): "
            "rename it"
        )
    return read_meta(dcp / SNAPSHOT_META, follow=follow) if os.path.lexists(dcp / SNAPSHOT_META) else {}


def archive_meta(dcp: Path, *, follow: bool = True) -> tuple[Path, dict[str, Any]]:
    """(the file, the object) of an archived fsdp2_epoch_N's final_meta.json: its own (inside it), else the one
    beside it (the seed's archive directory); TeamLayoutError when neither is there (it names the run)."""
    for file in (dcp / FINAL_META, dcp.parent / FINAL_META):
        if os.path.lexists(file):
            return file, read_meta(file, follow=follow)
    raise TeamLayoutError(
        f"{dcp.parent / FINAL_META}: missing (an FSDP2 archive's final_meta.json, beside fsdp2_epoch_N, names its "
        "source run)"
    )


def read_meta(path: Path, *, follow: bool = True) -> dict[str, Any]:
    """A meta file as a JSON object; TeamLayoutError naming it when it is not one. `follow=False` refuses a
    symbolic link too (a checkpoint series imported is a plain tree)."""
    try:  # bounded, regular files only: a FIFO or /dev/zero is refused
        doc = read_json(path, follow=follow)
    except (OSError, IrregularFileError) as e:
        raise TeamLayoutError(f"{path}: not a readable JSON file ({e}): rewrite it") from e
    if not isinstance(doc, dict):
        raise TeamLayoutError(f"{path}: expected a JSON object")
    return doc


def meta_int(meta: dict[str, Any], key: str) -> int | None:
    value = meta.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def epochs_in(path: Path) -> dict[int, Path]:
    """The run's fsdp2_epoch_N checkpoints by N."""
    if not path.is_dir():
        return {}
    found = {int(m.group(1)): p for p in path.iterdir() if (m := EPOCH.fullmatch(p.name)) and is_dcp(p)}
    return dict(sorted(found.items()))


def epoch_of(dcp: Path) -> int | None:
    m = EPOCH.fullmatch(dcp.name)
    return int(m.group(1)) if m else None


def step_of(name: str) -> int | None:
    """The step a `step_N` folder name gives (leading zeros allowed, as `step_dir` writes them); None: no step."""
    m = STEP.fullmatch(name)
    return int(m.group(1)) if m else None


def step_dir(step: int) -> str:
    """The folder name of `step` as the recorder writes it (`step_NNNNNNN`: sorted by name, sorted by step)."""
    return STEP_DIR.format(step)


def dcp_meta(dcp: Path) -> tuple[Path | None, dict[str, Any]]:
    """(the file, the object) of the first of a DCP directory's META_FILES present ((None, {}) when none is);
    a snapshot's `meta.json` in place of its snapshot_meta.json is refused, as `snapshot_meta` refuses it."""
    if dcp.parent.name == "snapshots":
        snapshot_meta(dcp)
    file = next((dcp / n for n in META_FILES if (dcp / n).is_file()), None)
    return (file, read_meta(file)) if file is not None else (None, {})


def is_dcp(path: Path) -> bool:
    return (path / DCP_METADATA).is_file()


def shard_count(dcp: Path) -> int:
    return sum(1 for p in dcp.iterdir() if SHARD.fullmatch(p.name))


def _archive(archive: Path, dcp: Path, config_dir: Path | None, names: LayoutNames) -> TeamCheckpoint:
    meta = read_meta(archive / FINAL_META)
    source = meta.get("source")
    if not isinstance(source, str) or not source:
        raise TeamLayoutError(f"{archive / FINAL_META}: no `source` naming the run directory: add it")
    run = source_run(archive, source, names.bases)
    if run is None and config_dir is None:
        tried = ", ".join(str(b) for b in (archive, *names.bases))
        raise TeamLayoutError(
            f"{archive / FINAL_META}: source {source!r} does not exist (looked in {tried}): restore the run there, "
            "set `source` to where it is now, or pass --config-dir"
        )
    metas = [*_epoch_metas(dcp, names), (archive / FINAL_META, meta)]
    return _checkpoint("archive", archive, dcp, run or archive / source, config_dir, epoch_of(dcp), metas, names)


def source_run(archive: Path, source: str, bases: tuple[Path, ...]) -> Path | None:
    """The run a relative `source` names: from the archive, else from the team's root (where its training
    ran); two different runs found is refused (the file does not say which it means)."""
    found = {p.resolve() for base in (archive, *bases) if (p := base / source).is_dir()}
    if len(found) > 1:
        raise TeamLayoutError(
            f"{archive / FINAL_META}: source {source!r} names {' and '.join(sorted(map(str, found)))}: make it "
            "absolute, or relative to the archive"
        )
    return next(iter(found), None)


def _epoch_metas(dcp: Path, names: LayoutNames) -> list[tuple[Path, dict[str, Any]]]:
    """The meta files an epoch directory may hold (its own, or an export's), in the order they are asked."""
    files = dict.fromkeys((names.epoch_meta, EPOCH_META, SNAPSHOT_META, FINAL_META))
    return [(dcp / n, read_meta(dcp / n)) for n in files if os.path.lexists(dcp / n)]


def _checkpoint(
    kind: TeamKind,
    path: Path,
    dcp: Path,
    run: Path,
    config_dir: Path | None,
    epoch: int | None,
    metas: list[tuple[Path, dict[str, Any]]],
    names: LayoutNames,
) -> TeamCheckpoint:
    step, step_from = _step(metas, names.step_keys)
    if step is None and kind == "snapshot" and (named := step_of(dcp.name)) is not None:
        step, step_from = named, f"the directory name {dcp.name}"
    world, world_from = _step(metas, ("source_world_size",))
    if world is None and (shards := shard_count(dcp)):
        world, world_from = shards, f"the {shards} __R_0.distcp shards"
    where = (config_dir or run).resolve()
    if not (where / ALL_CONFIG).is_file():
        how = "--config-dir" if config_dir is not None else "the run directory"
        raise TeamLayoutError(
            f"{where / ALL_CONFIG}: no such file ({how}): pass --config-dir DIR holding the run's "
            f"{ALL_CONFIG} and {TRAIN_METADATA}"
        )
    return TeamCheckpoint(
        kind=kind, path=path, dcp=dcp, run=run, config_dir=where, epoch=epoch, step=step, step_from=step_from,
        world_size=world, world_from=world_from,
    )  # fmt: skip


def _step(metas: list[tuple[Path, dict[str, Any]]], keys: tuple[str, ...]) -> tuple[int | None, str | None]:
    """The first meta file's value under one of `keys`, and where; two keys of one file that disagree are
    refused (it does not say which is the training's)."""
    for file, meta in metas:
        values = {k: v for k in keys if (v := meta_int(meta, k)) is not None}
        if len(set(values.values())) > 1:
            said = ", ".join(f"{k} {v}" for k, v in values.items())
            raise TeamLayoutError(
                f"{file}: {said}: declare which is the step ([tool.recorder.layout] step_key, docs/zero-shot.md)"
            )
        if values:
            key, value = next(iter(values.items()))
            return value, f"{file.name} {key}"
    return None, None


def _pick(path: Path, epochs: dict[int, Path], epoch: int | None) -> Path:
    if epoch is None:
        return epochs[max(epochs)]
    if epoch not in epochs:
        have = ", ".join(str(e) for e in epochs)
        raise TeamLayoutError(f"{path}: no fsdp2_epoch_{epoch} (--epoch / CKPT_EPOCH); epochs here: {have}")
    return epochs[epoch]
