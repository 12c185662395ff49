"""What the run's log says that evaluation needs, read and checked once per session."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.committed import CommittedCheckpoint, check_series, committed
from evaluator.errors import NotEvaluableError, SettingsError, UnverifiedRunError
from evaluator.settings import RunEvalConfig, run_eval_config
from recorder.store.catalogue import may_write
from recorder.store.events import Event
from recorder.store.kinds import RunOpened
from recorder.store.reader import read_run, run_id_from
from recorder.store.run import RunDir
from recorder.verify import verify_run
from recorder.verify.facts.eval_settings import RecordedEval
from trainer.policy.taskspec import BUILTIN_TASK

UNVERIFIED = "UNVERIFIED"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFacts:
    """What the run's log says that evaluation needs."""

    run: RunDir
    run_id: str  # as the run's own events record it (recorder.store.reader.run_id_from), never its folder's name
    events: list[Event]
    global_batch_size: int
    final_step: int | None
    eval_cfg: RunEvalConfig
    candidates: dict[int, CommittedCheckpoint]
    problems: list[str]
    task: Path  # the task spec scored: --task, else the run's recorded eval.task, else the shipped addition
    unverified: list[str]  # what verify found, when evaluated with --force; empty for an intact run


def task_path(config: Mapping[str, Any], override: Path | None) -> Path:
    """The task spec to score: the command's, else the one the run trained on (`eval.task` of its config, as
    recorder.store.upcast gives it), else the built-in addition."""
    from trainer.policy.taskspec import shipped

    if override is not None:
        return override
    section = config.get("eval")
    recorded = section.get("task") if isinstance(section, Mapping) else None
    if isinstance(recorded, str) and recorded and recorded != BUILTIN_TASK:
        return Path(recorded)
    return shipped(BUILTIN_TASK)


def check_recorded_task(recorded: RecordedEval, path: Path, given: bool) -> None:
    """A run recorded by `recorder train` is scored on the task spec it trained on, the one whose sha256 it
    recorded: SettingsError when `path` (--task when `given`, else the recorded file) is another, or gone."""
    from trainer.policy.taskspec import load_spec

    if recorded.task_sha256 is None:  # recorded before the field: nothing to compare with
        return
    trained_on = recorded.task or f"the built-in {BUILTIN_TASK} task"
    want = f"sha256 {recorded.task_sha256[:16]}..."
    if not given and not path.is_file():
        raise SettingsError(
            f"the run trained on the task spec {path}, which is not there: pass --task with that spec ({want})"
        )
    sha = load_spec(path).sha256
    if sha == recorded.task_sha256:
        return
    if given:
        raise SettingsError(
            f"--task {path}: not the task spec the run trained on and recorded ({trained_on}, {want}; this one's "
            f"is {sha[:16]}...): a run is scored on its own task and settings, or its score is another "
            "benchmark's; leave --task out, or give the spec it recorded"
        )
    raise SettingsError(
        f"{path} changed since the run recorded it ({want}, now {sha[:16]}...): pass --task with the spec "
        "the run trained on"
    )


def require_verified(run: RunDir, force: bool) -> list[str]:
    """The run's verification problems (empty when intact); UnverifiedRunError unless `force`."""
    report = verify_run(run)
    problems = [str(p) for p in report.problems]
    waived = [f"UNTRUSTED (judged with --untrusted-ok): {p}" for p in report.untrusted]
    if problems and not force:
        shown = "; ".join(problems[:3]) + (f"; ... and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise UnverifiedRunError(
            f"{run.path} fails verification ({shown}); only intact runs are evaluated. Run `recorder verify "
            f"{run.path}` for the details, or pass --force to evaluate anyway (results are marked {UNVERIFIED})."
        )
    return waived + problems  # a waived trust problem marks every result as an unverified one does


def read_facts(
    run_dir: Path | str | RunDir, *, allow_gaps: bool, task: Path | None = None, force: bool = False
) -> RunFacts:
    """Verify and read the run: intact, opened, training stopped, checkpoints committed in a valid series.

    With `task` (a spec file), its settings replace the ones the run recorded."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    unverified = require_verified(run, force)
    events = [e for e in read_run(run).events if may_write(e.writer, e.kind)]  # verify's rule kind-writer
    opened_event = next((e for e in events if e.kind == "run_opened"), None)
    if opened_event is None:
        raise NotEvaluableError(f"{run.path}: no run_opened event: not a recorded training run")
    opened = RunOpened.from_event(opened_event)
    run_id = run_id_from(events)
    assert run_id is not None  # the run has a run_opened
    gbs = opened.global_batch_size
    if not isinstance(gbs, int) or gbs < 1:
        raise NotEvaluableError(f"{run.path}: run_opened has no valid global_batch_size ({gbs!r})")
    stop = next((e for e in reversed(events) if e.kind == "train_stop"), None)
    if stop is None:
        raise NotEvaluableError(
            f"{run.path}: training has not stopped (no train_stop event): the 6.1 rule "
            "evaluates checkpoints after training halts; wait for it, or check the trainer"
        )
    cps = committed(events)
    if not cps:
        raise NotEvaluableError(f"{run.path}: no checkpoint_committed event: nothing to evaluate")
    candidates, problems = check_series(cps, gbs, stop.step, allow_gaps=allow_gaps)
    opened = RunOpened.from_event(opened_event)  # older runs in today's shape
    config = opened.config
    recorded = RecordedEval.from_config(config)
    if recorded is not None:  # recorded by `recorder train`: its own settings, on its own task
        check_recorded_task(recorded, task_path(config, task), given=task is not None)
        eval_cfg = run_eval_config(opened)
    elif task is not None:  # an import: the spec gives the settings
        from trainer.policy.taskspec import load_spec

        eval_cfg = RunEvalConfig.from_spec(load_spec(task))
    else:
        eval_cfg = run_eval_config(opened)  # says to give --task
    return RunFacts(
        run=run,
        run_id=run_id,
        events=events,
        global_batch_size=gbs,
        final_step=stop.step,
        eval_cfg=eval_cfg,
        candidates={c.step: c for c in candidates},
        problems=problems,
        task=task_path(config, task),
        unverified=unverified,
    )
