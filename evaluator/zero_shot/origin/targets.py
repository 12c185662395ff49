"""What a PATH given to `recorder zero-shot` is, which training run it belongs to, and where its results go.

A recorder run (an `events/` directory) is evaluated by the harness session and recorded as events. Any
other PATH is a checkpoint the format loaders read: a run directory holding its final checkpoint, a
snapshot `<run>/snapshots/step_N/`, an archive (`final_meta.json` naming its `source` run) or a Hugging
Face / recorder checkpoint directory. Results go to `<ckpt>/eval_results/official_lmeval7_<time>/`; a snapshot's
to `<run>/eval_results/step_NNNNNNN/official_lmeval7_<time>/`, since snapshots are pruned; with -o DIR, to
`DIR/<label>_<time>/`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.origin.team_run import LayoutNames, TeamCheckpoint, find
from evaluator.zero_shot.origin.training_run import TRAINING_CONFIG
from recorder.checkpoints.detect import CheckpointInfo
from recorder.checkpoints.readers import detect, reader
from recorder.checkpoints.torch_dcp.fsdp2_layout import FINAL_META, TeamLayoutError, read_meta, step_dir
from trainer.policy.errors import CheckpointError

Kind = Literal["recorder-run", "run", "snapshot", "archive", "checkpoint"]
RESULTS = "eval_results"
PREFIX = "official_lmeval7"  # the name a team's own lm-eval scripts give a result directory (and look for)


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """One PATH: what it is, its checkpoint info (None for a recorder run) and its training run."""

    path: Path
    kind: Kind
    label: str
    info: CheckpointInfo | None
    run: Path | None
    team: TeamCheckpoint | None = None  # one of the team's layouts: its config directory, epoch, step
    step: int | None = None  # a recorder run given by one of its step directories: only that step

    def results_dir(self, stamp: str, out: Path | None) -> Path:
        """Where this target's results.json, summary.txt and eval.log go."""
        if out is not None:
            return out / f"{self.label.replace('/', '_')}_{stamp}"
        return self.results_base() / f"{PREFIX}_{stamp}"

    def results_base(self) -> Path:
        """The directory whose official_lmeval7_* entries are this target's results (what collect reads)."""
        if self.team is not None and self.team.kind == "run" and self.path != self.team.run:
            return self.team.run / RESULTS  # fsdp2_epoch_N given inside its run: the run's results
        if self.kind == "snapshot" and self.run is not None and self.info is not None:
            return self.run / RESULTS / step_dir(self.info.step or 0)
        if self.path.is_file():  # a torch.save file: the results of each file of its directory apart
            return self.path.parent / RESULTS / self.path.name
        return self.path / RESULTS


def target(
    path: Path,
    *,
    epoch: int | None = None,
    config_dir: Path | None = None,
    model_key: str | None = None,
    names: LayoutNames | None = None,
) -> Target:
    """The Target of `path`; ZeroShotInputError (exit 2) naming it, and what to give, when it is none.
    `model_key`, `names`: where all_config.yaml keeps the model's config, and the team's meta names and
    step key, as the team declared them."""
    path = path.resolve()
    if (path / "events").is_dir() and not (path / ".metadata").is_file():
        return Target(path=path, kind="recorder-run", label=path.name, info=None, run=path)
    team = find(path, epoch=epoch, config_dir=config_dir, names=names)
    if team is not None:
        return _team_target(team, model_key)
    if epoch is not None:
        raise ZeroShotInputError(f"--epoch {epoch}: {path} holds no fsdp2_epoch_* checkpoints")
    _check_source(path)
    try:
        info = detect(path)
    except CheckpointError as e:
        raise ZeroShotInputError(
            f"{e}; give a run directory, a <run>/snapshots/step_N/, an archive (fsdp2_epoch_N + final_meta.json), "
            "a checkpoint directory or a recorder run"
        ) from e
    run = info.source_run
    if _recorder_step(info):
        # the recorder's own step directory: scored as its run's step, checked by the fingerprint training
        # recorded for it (the run logs no eval/loss), and recorded as the run's eval events
        assert run is not None
        return Target(path=run, kind="recorder-run", label=run.name, info=None, run=run, step=info.step)
    if run is None or run == path or not path.is_dir():
        kind: Kind = "run" if (path / TRAINING_CONFIG).is_file() else "checkpoint"
        label = run_label(path)
    elif path.parent.name == "snapshots":
        kind, label = "snapshot", f"{run.name}/{path.name}"
    else:
        kind, label = "archive", path.name
    return Target(path=path, kind=kind, label=label, info=info, run=run if run is not None else path)


def run_label(path: Path) -> str:
    """A checkpoint's label outside the team layouts: its path from its run's parent (`<project>/<run>/<name>`),
    so two runs' `epoch_3` are two labels."""
    return "/".join(path.parts[-3:])


def _recorder_step(info: CheckpointInfo) -> bool:
    """Whether `info` is a step directory of a recorder run: its consolidated safetensors (a reader whose row
    says so), or the torch DCP shards a data-parallel `recorder train` saves under
    `<run>/checkpoints/step_NNNNNNN/`."""
    run = info.source_run
    if run is None or not (run / "events").is_dir():
        return False
    return reader(info.format).run_step or (info.step is not None and info.path.parent == run / "checkpoints")


def _team_target(team: TeamCheckpoint, model_key: str | None) -> Target:
    """A team checkpoint's Target; its model config is all_config.yaml's `model:` section (or the declared key)."""
    from evaluator.zero_shot.origin.declaration import Declaration
    from evaluator.zero_shot.origin.team_config import read_team_config

    declared = Declaration(model=model_key)
    model = read_team_config(team.config_dir, model_code=None, declaration=declared).model()
    info = CheckpointInfo(
        path=team.dcp, format="torch-dcp", step=team.step, world_size=team.world_size, source_run=team.run,
        config=model, tokenizer_dir=None, weights_dir=team.dcp,
    )  # fmt: skip
    # an archive's copy of an epoch is not the run directory's: its own label (@ the archive), its own rows
    label = f"{team.label}@{team.path.name}" if team.kind == "archive" else team.label
    return Target(path=team.path, kind=team.kind, label=label, info=info, run=team.run, team=team)


def _check_source(path: Path) -> None:
    """An archive's final_meta.json must name a run that exists: its config and logs are there."""
    meta = path / FINAL_META
    if not os.path.lexists(meta):  # present but not a regular file (a FIFO, a link elsewhere): refused below
        return
    try:  # bounded, a regular file, a JSON object: the layout's one reader of its meta files
        source = read_meta(meta).get("source")
    except TeamLayoutError as e:
        raise ZeroShotInputError(str(e)) from e
    if isinstance(source, str) and source and not (path.parent / source).is_dir():
        raise ZeroShotInputError(
            f"{meta}: source {source!r} does not exist: restore the run there, or set `source` to where it is now"
        )
