"""The eval loss training logged at a step: tensorboard_scalars.json, else TensorBoard's event files (read
with the tensorboard package's own reader)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evaluator.zero_shot.errors import ZeroShotInputError
from recorder.tree_walk import walk

TAG = "eval/loss"
SCALARS = "tensorboard_scalars.json"
EVENT_FILES = "events.out.tfevents."


@dataclass(frozen=True, slots=True, kw_only=True)
class LoggedLoss:
    """The reference value and the file it came from."""

    value: float
    step: int
    source: Path


def logged_loss(run: Path, step: int | None) -> LoggedLoss:
    """eval/loss at `step` from the run's logs; ZeroShotInputError naming the file and the fix."""
    scalars = run / SCALARS
    if scalars.is_file():
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
    try:
        rows = json.loads(path.read_text()).get(TAG, [])
        return {int(r["step"]): float(r["value"]) for r in rows}
    except (json.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError) as e:
        raise ZeroShotInputError(
            f'{path}: not a scalars file ({e}): it holds {{"{TAG}": [{{"step": S, "value": V}}, ...]}}'
        ) from e


def _from_events(directory: Path) -> dict[int, float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(directory), size_guidance={"scalars": 0})
    acc.Reload()
    if TAG not in acc.Tags().get("scalars", []):
        return {}
    return {int(e.step): float(e.value) for e in acc.Scalars(TAG)}
