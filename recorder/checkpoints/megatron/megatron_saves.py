"""Which `iter_*` folder of a Megatron-Core save holds the checkpoint, and whether that save finished.

Megatron-Core writes each save into `iter_NNNNNNN/` of its save directory and then records the iteration in
`latest_checkpointed_iteration.txt` beside it; it never removes an older folder, and a folder copied in from
another step looks like any other. So where a save directory holds more than one iteration the one the writer
recorded is the checkpoint: the tracker file's, or the `iteration` a NeMo-RL step's `training_info.json` names.
Nothing recorded, and the choice is refused naming every folder: the first in sort order may be a leftover.

A save finished when its iteration folder holds the torch_dist `.metadata` (written last, once every rank's
shards are down), every shard that `.metadata` names (the loader checks those while it reads them and
raises `UnfinishedSaveError`), and the two files megatron-core writes with every torch_dist save: `common.pt`
(the state that is not sharded) and `metadata.json` (the save's format); one of them missing is a step copied
in part.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from recorder.errors import DataError, InputError
from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded

TRACKER: Final = "latest_checkpointed_iteration.txt"
DCP_METADATA: Final = ".metadata"
COMPANIONS: Final = ("common.pt", "metadata.json")  # megatron-core writes both with every torch_dist save
_TRACKER_LIMIT = 64  # an iteration number or "release", and a newline


class IterationChoiceError(InputError):
    """A save directory whose iteration folders and records do not say which one is the checkpoint."""


class UnfinishedSaveError(DataError):
    """A save that did not finish: its `.metadata` names a shard file that is not there."""


@dataclass(frozen=True, slots=True)
class Iteration:
    """The iteration folder that holds the checkpoint, and the ones left beside it that do not."""

    folder: Path
    passed_over: tuple[Path, ...] = ()
    recorded_by: str | None = None  # the file and key that named it, where more than one folder was there


def iteration_folders(weights: Path) -> list[Path]:
    """The `iter_*` folders of a Megatron-Core save directory, by name."""
    return sorted(p for p in weights.glob("iter_*") if p.is_dir()) if weights.is_dir() else []


def choose_iteration(
    weights: Path, info: Mapping[str, Any] | None = None, info_path: Path | None = None
) -> Iteration | None:
    """The iteration folder of save directory `weights` (None: it holds none). `info` is the step's
    training_info.json (at `info_path`), whose `iteration` names one too. IterationChoiceError where a record
    names a folder that is not there, two records disagree, or several folders are there and nothing says
    which."""
    folders = iteration_folders(weights)
    if not folders:
        return None
    named = _recorded(weights, info, info_path)
    if named:
        (first_source, first), *others = named
        for source, value in others:
            if value != first:
                raise IterationChoiceError(
                    f"{first_source} names iteration {first}, {source} names {value}: which save is the step's "
                    "is not known; remove the one that does not belong"
                )
        wanted = weights / (first if first == "release" else f"iter_{int(first):07d}")
        if wanted not in folders:
            raise IterationChoiceError(
                f"{first_source} names iteration {first}, and {weights} has no {wanted.name} (it holds "
                f"{_names(folders)}): the save it records is not there"
            )
        rest = tuple(f for f in folders if f != wanted)
        return Iteration(wanted, rest, first_source if rest else None)
    if len(folders) > 1:
        raise IterationChoiceError(
            f"{weights}: {len(folders)} iteration folders ({_names(folders)}) and no {TRACKER} or "
            "training_info.json 'iteration' saying which is this step's: remove the ones that do not belong "
            f"(a leftover of another save), or write the step's iteration into {weights / TRACKER}"
        )
    return Iteration(folders[0])


def _recorded(weights: Path, info: Mapping[str, Any] | None, info_path: Path | None) -> list[tuple[str, str]]:
    """(where, iteration) for each record naming the step's iteration: the tracker file, training_info.json."""
    found = []
    tracker = weights / TRACKER
    if tracker.exists():
        try:
            text = read_bounded(tracker, _TRACKER_LIMIT, TRACKER).decode("ascii", "replace").strip()
        except IrregularFileError as e:
            raise IterationChoiceError(str(e)) from e
        if not (text.isdigit() or text == "release"):
            raise IterationChoiceError(f"{tracker}: {text!r} is not an iteration number (Megatron-Core writes one)")
        found.append((str(tracker), text if text == "release" else str(int(text))))
    value = (info or {}).get("iteration")
    if value is not None:
        where = f"{info_path or 'training_info.json'} 'iteration'"
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise IterationChoiceError(f"{where}: {value!r} is not an iteration number")
        found.append((where, str(value)))
    return found


def unfinished(
    weights: Path,
    info: Mapping[str, Any] | None = None,
    info_path: Path | None = None,
    missing_shards: Callable[[Path], list[str]] | None = None,
) -> str | None:
    """Why the Megatron-Core save in `weights` did not finish, from its files alone (None: nothing says so).
    `missing_shards(folder)`: the shard files the folder's `.metadata` names that are not there (it reads
    the `.metadata`, which the core does not)."""
    chosen = choose_iteration(weights, info, info_path)
    if chosen is None:
        return f"{weights}: no iter_* folder (the save wrote no iteration)"
    if not (chosen.folder / DCP_METADATA).is_file():
        return f"{chosen.folder / DCP_METADATA}: missing (torch_dist writes it last, once every shard is down)"
    missing = missing_shards(chosen.folder) if missing_shards is not None else []
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return f"{chosen.folder / missing[0]}{more}: missing, and its {DCP_METADATA} places tensors in it"
    lacking = next((name for name in COMPANIONS if not (chosen.folder / name).is_file()), None)
    if lacking is not None:
        return (
            f"{chosen.folder / lacking}: missing (megatron-core writes it with every torch_dist save: a step "
            "copied in part; copy it whole to import it)"
        )
    return None


def _names(folders: list[Path]) -> str:
    return ", ".join(f.name for f in folders)
