"""`recorder train --resume RUN_DIR`: continue a stopped or killed run from its last committed checkpoint.

What a resumed session restores, and what it does not:
- the config: the one recorded in the run's first run_opened (a resumed run is one config; no --set);
- the weights: from the last checkpoint whose checkpoint_committed event exists and whose weights file
  still has the recorded sha256 (loaded with safetensors, never unpickled);
- NOT the AdamW moments: checkpoints are weights-only (the 6.1 rule times every save, so the trainer does
  not write optimizer state); the optimizer starts fresh, as after a weights-only restart elsewhere;
- the rollouts: per-step, per-sample seeds, so step N+1 samples as it would have in one session.

It appends to the same run in a new segment (a writer never reopens a segment): run_opened with
`resumed_from` (the run id), `resumed_at_step` and `resumed_checkpoint`, then the remaining steps. A
checkpoint directory left by the killed session without a commit event is moved aside (never referenced,
never overwritten). Replay marks a resumed run: its history is kept, but it is not a valid timed MLPerf run.

A signed run's killed session left its segment unsigned (no closing record, perhaps a torn tail): the
resumed session, signing with the same key, adopts it up to the killed writer's last signature
(recorder.store.adoption) before it writes, so the run verifies under its trust again, and exactly the adopted
bytes are accepted; the unsigned tail is set aside (`.unsigned-tail-<segment>`, named in `set_aside`) and
nothing is planned from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from recorder.checkpoints.recorder_format import file_sha256
from recorder.interrupts import deferred_interrupts
from recorder.signing import signer_from_environment
from recorder.store.adoption import adopt, adoptable, signed_prefix
from recorder.store.events import Event
from recorder.store.kinds import NULL, CheckpointCommitted, InitStart, RunOpened, TrainStop
from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run
from recorder.verify.summary import SegmentSummary
from recorder.verify.trust import untrusted_ok_from_environment
from trainer.config import TrainConfig, config_from_dict
from trainer.errors import TrainerError
from trainer.policy.kernels import recorded_pinned
from trainer.start import WRITER, run_opened


class ResumeError(TrainerError):
    """A run that cannot be resumed (finished, nothing committed, altered checkpoints); exit 2."""

    exit_code = 2


@dataclass(frozen=True)
class ResumePlan:
    run: RunDir
    config: TrainConfig
    step: int  # the checkpoint's step: training continues at step + 1
    checkpoint: Path  # inside the run directory
    orphans: tuple[Path, ...]  # checkpoint directories with no commit event (set aside before training)
    adopted: tuple[SegmentSummary, ...] = ()  # the killed sessions' open segments, adopted when signing
    pinned: bool = False  # the run started with pinned CPU kernels: its sessions keep that float order


def plan_resume(run_dir: Path | str) -> ResumePlan:
    """Check the run can be resumed and pick the checkpoint; raises ResumeError saying why not."""
    report = verify_run(run_dir, untrusted_ok=True)
    signer = signer_from_environment()
    key = signer.public_key_hex if signer is not None else ""
    adopted = tuple(adoptable(report.run, report.segments, WRITER, key)) if signer is not None else ()
    names = {s.name for s in adopted}
    # what the adoption mends is not a problem; any other trust problem is, unless the caller judged past it
    untrusted = [] if untrusted_ok_from_environment() else [p for p in report.untrusted if p.segment not in names]
    problems = [*report.problems, *untrusted]
    if problems:  # never continue from (or append to) a log that was altered
        raise ResumeError(
            f"{report.run.path} fails verification ({problems[0]}); run `recorder verify "
            f"{report.run.path}`: an altered run is not resumed"
        )
    log = read_run(run_dir)
    # what a killed session wrote after its last signature is not adopted, so nothing is planned from it
    signed = {s.name: signed_prefix(s).events for s in adopted}
    run, events = log.run, [e for e in log.events if e.seq < signed.get(e.segment, e.seq + 1)]
    opened_event = next((e for e in events if e.kind == "run_opened" and e.writer == WRITER), None)
    opened = None if opened_event is None else RunOpened.from_event(opened_event)
    if opened is None or not opened.config:
        raise ResumeError(
            f"{run.path}: no trainer run_opened with a recorded config: only runs recorded by "
            "`recorder train` can be resumed"
        )
    stops = [e for e in events if e.kind == "train_stop"]
    if stops and TrainStop.from_event(stops[-1]).status == "completed":
        raise ResumeError(
            f"{run.path}: training already completed (train_stop seq {stops[-1].seq} in "
            f"{stops[-1].segment}); nothing to resume"
        )
    cfg = config_from_dict(dict(opened.config))
    commits = sorted(
        ((e, CheckpointCommitted.from_event(e)) for e in events if e.kind == "checkpoint_committed"),
        key=lambda c: c[0].step or 0,
    )
    if not commits:
        raise ResumeError(
            f"{run.path}: no checkpoint was committed (checkpoints start at step "
            f"{cfg.validation_start}); nothing to resume from: start a new run"
        )
    last, committed = commits[-1]
    checkpoint = _inside(run, last, committed)
    if file_sha256(checkpoint / "model.safetensors") != committed.sha256:
        raise ResumeError(
            f"{checkpoint}/model.safetensors: sha256 differs from its checkpoint_committed event "
            f"({last.segment} seq {last.seq}): altered after commit; not resumed from"
        )
    assert last.step is not None
    if last.step >= cfg.max_steps:
        raise ResumeError(f"{run.path}: the last checkpoint is the final step {last.step}; nothing left to train")
    referenced = {str(PurePosixPath(c.path)) for _, c in commits}
    orphans = tuple(
        p
        for p in sorted(run.checkpoints.glob("step_*"))
        if str(PurePosixPath(p.relative_to(run.path))) not in referenced
    )
    pinned = recorded_pinned(opened.provenance)
    return ResumePlan(run, cfg, last.step, checkpoint, orphans, adopted, pinned)


def _inside(run: RunDir, event: Event, committed: CheckpointCommitted) -> Path:
    """The event's checkpoint directory, refused when the recorded path leaves the run (symlinks resolved)."""
    rel = committed.path
    root = run.path.resolve()
    target = (root / rel).resolve()
    if not rel or PurePosixPath(rel).is_absolute() or root not in target.parents:
        raise ResumeError(
            f"{event.segment} seq {event.seq}: checkpoint path {rel!r} is outside the run directory {root}: refused"
        )
    if not (target / "model.safetensors").is_file():
        raise ResumeError(f"{target}: committed at {event.segment} seq {event.seq} but missing now; not resumed")
    return target


def open_resumed_session(plan: ResumePlan) -> LogWriter:
    """The resumed session's own segment: the uncommitted checkpoints set aside, then its run_opened (what it
    resumed from) and init_start. All of it or none: Ctrl-C waits until it is recorded (recorder.interrupts)."""
    with deferred_interrupts():
        set_aside = [_set_aside(p) for p in plan.orphans]
        signer = signer_from_environment()
        if plan.adopted and signer is not None:
            set_aside += adopt(plan.run, signer, plan.adopted)
        log = LogWriter(plan.run, WRITER, signer=signer)
        log.append(
            run_opened(
                plan.config,
                resumed_from=log.run_id,
                resumed_at_step=plan.step,
                resumed_checkpoint=str(plan.checkpoint.relative_to(plan.run.path.resolve())),
                optimizer="re-initialised (checkpoints are weights-only)",
                set_aside=tuple(str(p.relative_to(plan.run.path)) for p in set_aside),
            )
        )
        log.append(InitStart(warmup=NULL))
    return log


def _set_aside(path: Path) -> Path:
    """Move an uncommitted checkpoint directory out of the way (kept for inspection, never referenced)."""
    target = path.with_name(f".uncommitted-{path.name}-{os.getpid()}")
    os.rename(path, target)
    return target
