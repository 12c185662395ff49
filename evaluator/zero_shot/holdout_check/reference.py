"""The eval loss training logged at a step: tensorboard_scalars.json, else TensorBoard's event files (their
records parsed with the tensorboard package's own protobuf classes). Each file is read once through the bounded
reader (recorder.untrusted.untrusted_files): a FIFO or device named like an event file is refused at once, not waited
on."""

from __future__ import annotations

import math
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluator.zero_shot.errors import ZeroShotInputError
from recorder.untrusted.tree_walk import walk
from recorder.untrusted.untrusted_files import read_bounded, read_json

TAG = "eval/loss"
SCALARS = "tensorboard_scalars.json"
EVENT_FILES = "events.out.tfevents."
SCALARS_LIMIT = 64 * 1024**2  # a run's scalars as JSON: a million evaluations are about 50 MB
EVENTS_LIMIT = 256 * 1024**2  # one event file; a run whose file is larger writes tensorboard_scalars.json


@dataclass(frozen=True, slots=True, kw_only=True)
class LoggedLoss:
    """The reference value and the file it came from."""

    value: float
    step: int
    source: Path


def logged_loss(run: Path, step: int | None) -> LoggedLoss:
    """eval/loss at `step` from the run's logs; ZeroShotInputError naming the file and the fix."""
    scalars = run / SCALARS
    if os.path.lexists(scalars):  # whatever it is: the bounded reader refuses a FIFO or a device
        source, values = scalars, _from_json(scalars)
    elif folders := _event_folders(run):
        source, values = folders[0], _from_events(folders[0])
    else:
        raise ZeroShotInputError(
            f"{run}: no {SCALARS} and no TensorBoard event file: nothing to check the holdout loss against; "
            "use --holdout record to store it, or --holdout off"
        )
    if step is None or step not in values:
        logged = ", ".join(str(s) for s in sorted(values)) or "none"
        raise ZeroShotInputError(
            f"{source}: no {TAG} at step {step} (logged at steps: {logged}): evaluate a checkpoint of a logged "
            "step, or use --holdout record for a checkpoint saved between two evaluations"
        )
    return LoggedLoss(value=values[step], step=step, source=source)


def _event_folders(run: Path) -> list[Path]:
    """The folders under `run` that hold TensorBoard event files; ZeroShotInputError where more than one
    does: which of them logged this run's loss is not for the reader to guess."""
    folders = sorted({Path(e.path).parent for e in walk(run) if e.name.startswith(EVENT_FILES)})
    if len(folders) > 1:
        raise ZeroShotInputError(
            f"{run}: TensorBoard event files in {len(folders)} folders ({folders[0]}, {folders[1]}"
            f"{', ...' if len(folders) > 2 else ''}): which one logged this run's {TAG} is not known; keep that "
            f"folder only, or write {SCALARS} beside the run"
        )
    return folders


def _from_json(path: Path) -> dict[int, float]:
    doc = read_json(path, "scalars file", limit=SCALARS_LIMIT, follow=True)  # bounded: regular file, size, depth
    rows = doc.get(TAG, []) if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and {"step", "value"} <= set(r) for r in rows):
        raise ZeroShotInputError(f'{path}: not a scalars file: it holds {{"{TAG}": [{{"step": S, "value": V}}, ...]}}')
    return _checked(path, [(r["step"], r["value"]) for r in rows])


def _checked(source: Path, pairs: list[tuple[object, object]]) -> dict[int, float]:
    """{step: loss}, each step a whole number and each loss a finite number at least 0 (a cross-entropy): a
    NaN logged loss would make every gap NaN, which no comparison fails."""
    out: dict[int, float] = {}
    for step, value in pairs:
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ZeroShotInputError(f"{source}: {TAG} step {step!r} is not a whole number of steps")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
            raise ZeroShotInputError(
                f"{source}: {TAG} at step {step} is {value!r}, not a finite loss (at least 0): the logged "
                "value cannot be compared with; use --holdout record, or --holdout off"
            )
        out[step] = float(value)
    return out


def _from_events(directory: Path) -> dict[int, float]:
    """eval/loss from the folder's event files, in name order as TensorBoard loads them (a later record of a
    step replaces an earlier one). Each file is read once, bounded (a FIFO or device refused at once), and its
    records parsed here: TFRecord framing (length, its CRC, the Event protobuf, its CRC)."""
    pairs: list[tuple[object, object]] = []
    for file in sorted(p for p in directory.iterdir() if p.name.startswith(EVENT_FILES)):
        pairs.extend(_event_values(file, read_bounded(file, EVENTS_LIMIT, "TensorBoard event file", follow=True)))
    return _checked(directory, pairs)


def _event_values(file: Path, data: bytes) -> Iterator[tuple[object, object]]:
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto import event_pb2
    from tensorboard.util import tensor_util

    at = 0
    while at + 12 <= len(data):  # a record cut short at the end (a run still writing) ends the file
        (length,) = struct.unpack_from("<Q", data, at)
        if at + 12 + length + 4 > len(data):
            break
        try:
            event = event_pb2.Event.FromString(data[at + 12 : at + 12 + length])
        except DecodeError as e:
            raise ZeroShotInputError(f"{file}: byte {at}: not a TensorBoard event record ({e})") from e
        for v in event.summary.value:
            if v.tag != TAG:
                continue
            if v.HasField("simple_value"):
                yield event.step, v.simple_value
            elif v.HasField("tensor") and (array := tensor_util.make_ndarray(v.tensor)).size == 1:
                yield event.step, float(array.reshape(()))
            else:
                raise ZeroShotInputError(f"{file}: byte {at}: {TAG} at step {event.step} is not one number")
        at += 12 + length + 4
