"""A pretraining team's checkpoints where its training wrote them (docs/zero-shot.md, "A team's run"), as
the shared layout parser reads them (recorder/checkpoints/torch_dcp/fsdp2_layout.py), with the step the checkpoint
holds when no
meta file says it: its saved `step` (or `global_step`) entry, at the top level or in a group beside model and
optimizer (`extra.step`, `progress.global_step`), read without unpickling anything but a plain number.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from recorder.checkpoints.torch_dcp.fsdp2_layout import (
    ALL_CONFIG,
    DCP_METADATA,
    FINAL_META,
    SNAPSHOT_META,
    STEP_KEYS,
    TRAIN_METADATA,
    LayoutNames,
    TeamCheckpoint,
    TeamKind,
    meta_int,
)
from recorder.checkpoints.torch_dcp.fsdp2_layout import find as find_layout

__all__ = [
    "ALL_CONFIG", "FINAL_META", "SNAPSHOT_META", "TRAIN_METADATA", "LayoutNames", "TeamCheckpoint", "TeamKind", "find",
]  # fmt: skip
OPTIMIZER_ROOTS = ("optim", "optimizer", "model")  # their `step` entries are per parameter, not the training's


def find(
    path: Path, *, epoch: int | None = None, config_dir: Path | None = None, names: LayoutNames | None = None
) -> TeamCheckpoint | None:
    """The team checkpoint at `path` (None: none of the team's layouts); a step no meta file gives is the
    checkpoint's own saved step."""
    found = find_layout(path, epoch=epoch, config_dir=config_dir, names=names)
    if found is None or found.step is not None:
        return found
    step, fqn = saved_step(found.dcp)
    return found if step is None else replace(found, step=step, step_from=f"the checkpoint's saved {fqn}")


def saved_step(dcp: Path) -> tuple[int | None, str | None]:
    """(the training step the checkpoint holds beside model and optimizer, its entry's name), or (None, None)
    when there is none, more than one, or one that is not a plain number."""
    from recorder.checkpoints.torch_dcp.safe_metadata import MAX_METADATA_BYTES, load_metadata
    from recorder.checkpoints.torch_dcp.torch_save_view import TorchSaveError, view_number
    from recorder.untrusted.untrusted_files import read_bounded

    meta_file = dcp / DCP_METADATA
    metadata = load_metadata(meta_file, read_bounded(meta_file, MAX_METADATA_BYTES, "DCP .metadata", follow=True))
    found = [(i.fqn, si) for i, si in metadata.storage_data.items() if _is_training_step(i.fqn)]
    if len(found) != 1 or not 0 < found[0][1].length <= 1 << 20:  # a pickled number is a few hundred bytes
        return None, None
    fqn, where = found[0]
    with open(dcp / where.relative_path, "rb") as f:
        f.seek(where.offset)
        raw = f.read(where.length)
    try:
        value: int | float | None = view_number(memoryview(raw), 0, len(raw))
    except TorchSaveError:  # a step that is not a plain number is no step: the caller asks for one
        return None, None
    step = meta_int({"step": value}, "step")
    return (step, fqn) if step is not None else (None, None)


def _is_training_step(fqn: str) -> bool:
    """`step` / `global_step`, or `<group>.step` / `<group>.global_step` of a group that is not the optimizer's
    or the model's (`extra.step`, `progress.global_step`)."""
    parts = fqn.split(".")
    if parts[-1] not in STEP_KEYS:
        return False
    return len(parts) == 1 or (len(parts) == 2 and parts[0] not in OPTIMIZER_ROOTS)
