"""`recorder zero-shot PATH...`: check every input first (nothing is written on bad input), evaluate each
checkpoint (one per worker), then write each one's results and print the table once all are done."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.harness.taskset import TaskData
from evaluator.zero_shot.errors import ZeroShotInputError, ZeroShotInterrupted
from evaluator.zero_shot.holdout_check.plain_holdout import logged_validation_loss, plain_holdout_plan
from evaluator.zero_shot.holdout_check.reference import LoggedLoss, logged_loss
from evaluator.zero_shot.job import NOT_APPLICABLE, Job, JobResult, Report, parts
from evaluator.zero_shot.loading import ModelCode
from evaluator.zero_shot.options import ZeroShotOptions
from evaluator.zero_shot.origin.conventions import (
    capacity_switch,
    check_writable,
    commit_record,
    declared_code,
    layout_names,
    training_commit,
)
from evaluator.zero_shot.origin.declaration import Declaration
from evaluator.zero_shot.origin.plain_checkpoint import PlainCheckpoint, plain_checkpoint
from evaluator.zero_shot.origin.targets import PREFIX, RESULTS, Target, target
from evaluator.zero_shot.origin.team_config import TeamConfig, read_team_config, team_holdout_plan
from evaluator.zero_shot.origin.training_run import TRAINING_CONFIG, HoldoutPlan, holdout_plan
from evaluator.zero_shot.pool import WorkersUsed, run_jobs
from evaluator.zero_shot.reporting.outputs import newest_results, table, write_outputs
from evaluator.zero_shot.rerun import rerun_command
from evaluator.zero_shot.task_sources import resolve_task_data
from recorder.checkpoints.torch_dcp.fsdp2_layout import step_dir
from recorder.errors import RecorderError
from recorder.imported_code import foreign_startup
from recorder.interrupts import deferred_interrupts
from recorder.provenance import provenance
from recorder.results.zero_shot import (
    HarnessVersion,
    LoadedCheckpoint,
    RecordedEvents,
    StepCheckpoint,
    StepSettings,
    ZeroShotDocument,
    ZeroShotResults,
    ZeroShotSettings,
    ZeroShotStepResults,
)

if TYPE_CHECKING:
    from evaluator.session import StepOutcome
    from recorder.checkpoints.detect import CheckpointInfo

Echo = Callable[[str], None]
NO_SWITCH = "none: no capacity switch declared and the factory takes no `capacity` argument"
BUILT_AS_CONFIGURED = "none: built as the training's config says"
TEAM_MODEL_GROUP = "model"  # a team's DCP state {model, optim, ...}: the model's tensors, the rest left out


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """One PATH, checked: its target, its job (None for a recorder run) and the logged loss it must meet."""

    target: Target
    job: Job | None
    reference: LoggedLoss | None = None
    sources: dict[str, Any] = field(default_factory=dict)  # where each setting came from (results.json)
    training_commit: str | None = None  # train_metadata.yaml's git_commit


@dataclass(slots=True, kw_only=True)
class ZeroShotSummary:
    docs: list[ZeroShotDocument] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    table: str = ""
    interrupted: bool = False


def prepare(paths: list[Path], options: ZeroShotOptions) -> tuple[list[TaskData], list[Prepared]]:
    """The tasks' data and every PATH's job; ZeroShotInputError (or the loaders' input errors) at the first
    problem, before anything is loaded or written."""
    if not paths:
        raise ZeroShotInputError("name at least one checkpoint PATH")
    foreign = foreign_startup()
    if foreign:  # it ran before this command did, and can rewrite any score it computes
        raise ZeroShotInputError(
            f"foreign start-up code in this process: {'; '.join(foreign)}: remove it (or run without the "
            "PYTHONPATH entry that brings it); no score is computed with it loaded"
        )
    tasks = resolve_task_data(
        list(options.tasks), hf_cache=options.hf_cache, data_dir=options.data_dir, sources=options.sources
    )
    code, declaration = declared_code(options.code)
    names = layout_names(declaration, code.root)
    targets = [
        target(p, epoch=options.epoch, config_dir=options.config_dir, model_key=declaration.model, names=names)
        for p in paths
    ]
    for t in targets:
        if t.info is not None:
            check_writable(t.results_dir("", options.out).parent)
    capacity, switch = capacity_switch(code, skip_capacity=options.skip_capacity)
    code = replace(code, switch=switch)
    return tasks, [_prepare(t, tasks, options, code, declaration, capacity) for t in targets]


def _prepare(
    t: Target,
    tasks: list[TaskData],
    options: ZeroShotOptions,
    code: ModelCode,
    declaration: Declaration,
    capacity: bool | None,
) -> Prepared:
    if t.info is None:
        return Prepared(target=t, job=None)
    plan: HoldoutPlan | None = None
    reference = None
    tokenizer = None
    sources = _known_sources(t, options, code, capacity)
    commit = None
    plain: PlainCheckpoint | None = None
    if t.team is not None:
        team = read_team_config(t.team.config_dir, model_code=code.root, declaration=declaration)
        tokenizer, sources["tokenizer"] = team.tokenizer(options.tokenizer)
        commit = training_commit(team.metadata)
        code = replace(code, model_group=TEAM_MODEL_GROUP)
        positions, said = team.max_length()
        if positions is not None:
            code, sources["max_length"] = replace(code, max_length=positions), said
    else:
        plain = plain_checkpoint(t.info, declaration, tokenizer=options.tokenizer, root=code.root)
        t, tokenizer = replace(t, info=plain.info), plain.tokenizer
        sources |= plain.sources
        if plain.max_length is not None:
            code = replace(code, max_length=plain.max_length)
    assert t.info is not None
    _check_tokenizer(t.info, tokenizer, code)
    _check_model(t.info, code)
    plain = None if t.team is not None or declaration.config_file is None else plain
    if options.holdout != "off":
        plan, reference = _holdout_plan(t, options, code, team if t.team is not None else None, plain, declaration)
    job = Job(
        label=t.label,
        info=t.info,
        tasks=tuple(tasks),
        limit=options.limit,
        dtype=options.dtype,
        device=options.device,
        batch_size=options.batch_size,
        code=code,
        holdout=plan,
        tokenizer=tokenizer,
        capacity=capacity,
        skip_capacity=options.skip_capacity,
        processes=options.processes,
        reference=None if reference is None else reference.value,
        max_gap=options.max_gap,
        log_samples=options.log_samples,
        online=options.online,
    )
    return Prepared(target=t, job=job, reference=reference, sources=sources, training_commit=commit)


def _holdout_plan(
    t: Target,
    options: ZeroShotOptions,
    code: ModelCode,
    team: TeamConfig | None,
    plain: PlainCheckpoint | None,
    declaration: Declaration,
) -> tuple[HoldoutPlan, LoggedLoss | None]:
    """How training computed the holdout loss (a team run's all_config.yaml, a checkpoint's declared config
    file and metrics log, a training run's training.json), and the value it logged at the step (None: record)."""
    assert t.run is not None and t.info is not None
    world = options.train_world_size or t.info.world_size
    if team is not None:
        plan = team_holdout_plan(team, world_size=world, data=options.holdout_data, hook=code.holdout_fn)
    elif plain is not None:
        bases = [p for p in (plain.config_file.parent if plain.config_file else None, code.root, Path.cwd()) if p]
        plan = plain_holdout_plan(
            plain, declaration, world_size=options.train_world_size, data=options.holdout_data, bases=bases
        )
    else:
        plan = holdout_plan(t.run, _run_config(t), world_size=world, data=options.holdout_data)
    if options.holdout != "on":
        return plan, None
    if t.info.step is None:
        raise ZeroShotInputError(
            f"{t.path}: no step (no meta file gives one and the checkpoint holds no saved step), so no "
            "logged eval/loss to compare with: run with --holdout record (EVAL_HOLDOUT_CHECK=record) or off"
        )
    if plain is not None:
        return plan, logged_validation_loss(plain, declaration, t.info.step)
    return plan, logged_loss(t.run, t.info.step)


def _check_tokenizer(info: CheckpointInfo, tokenizer: Path | None, code: ModelCode) -> None:
    """The tokenizer loaded once before any weights are: no EOS known, or a declared token it lacks, is one
    `error:` line now, not a failed checkpoint later."""
    from evaluator.zero_shot.loading import tokenizer_files, tokenizer_of
    from trainer.policy.errors import CheckpointError, TokenizerError

    try:
        tokenizer_of(tokenizer_files(info, tokenizer), code)
    except (TokenizerError, CheckpointError) as e:
        raise ZeroShotInputError(str(e)) from e


def _check_model(info: CheckpointInfo, code: ModelCode) -> None:
    """The team's model built without weights before any are read: its positions and where its logits are
    known, or one `error:` line now naming what to declare, not a failed checkpoint later."""
    from evaluator.zero_shot.loading import check_model_before_reading
    from trainer.policy.errors import CheckpointError, ModelCodeError

    try:
        check_model_before_reading(info, code)
    except (ModelCodeError, CheckpointError) as e:
        raise ZeroShotInputError(str(e)) from e


def _known_sources(t: Target, options: ZeroShotOptions, code: ModelCode, capacity: bool | None) -> dict[str, Any]:
    """Where the step, the world size and the capacity switch came from (the tokenizer and holdout are added
    as they are read)."""
    team = t.team
    world = "--train-world-size" if options.train_world_size else (team.world_from if team else "the checkpoint")
    out: dict[str, Any] = {"step": team.step_from if team else "the checkpoint", "world_size": world}
    if code.factory is not None:
        unswitched = code.switch is None and options.skip_capacity
        out["factory"] = code.factory
        out["capacity"] = {
            "value": NOT_APPLICABLE if unswitched else capacity,
            "switch": code.switch.describe() if code.switch else NO_SWITCH if unswitched else BUILT_AS_CONFIGURED,
        }
    if code.bos:
        out["bos"] = "every request begins with the tokenizer's BOS ([tool.recorder] bos)"
    return out


def _run_config(t: Target) -> dict[str, Any]:
    import os

    from recorder.untrusted.untrusted_files import read_json

    assert t.run is not None and t.info is not None
    file = t.run / TRAINING_CONFIG
    if not os.path.lexists(file):
        raise ZeroShotInputError(
            f"{file}: no training config, so no holdout settings: add it (docs/zero-shot.md), or --holdout off"
        )
    config = read_json(file, "training config", follow=True)  # bounded: a FIFO or device refused at once
    if not isinstance(config, dict):
        raise ZeroShotInputError(f"{file}: not a JSON object: it holds the run's holdout settings")
    return config


def zero_shot(
    paths: list[Path], options: ZeroShotOptions, *, echo: Echo, width: int | None = None, report: Report | None = None
) -> ZeroShotSummary:
    """Evaluate every PATH; the table once all are done (in blocks that fit `width`, when given; whole in the
    files). Holdout aborts and load failures are in `failed`. `report` hears what each worker does.

    Ctrl-C: the finished checkpoints' results are written as at the end (whole: no Ctrl-C while writing), the
    interrupted and waiting ones write nothing, and ZeroShotInterrupted says which is which."""
    tasks, prepared = prepare(paths, options)
    log: list[str] = []

    def say(text: str) -> None:
        log.append(text)
        echo(text)

    jobs = sum(p.job is not None for p in prepared)
    what = [f"{jobs} checkpoint(s)"] if jobs else []
    runs = sum(p.job is None and p.target.step is None for p in prepared)
    steps = len(prepared) - jobs - runs  # a recorder step directory: that step of its run
    what += [f"{runs} recorder run(s), each committed step"] if runs else []
    what += [f"{steps} recorder step(s)"] if steps else []
    say(
        f"zero-shot: {', '.join(what)}; tasks {', '.join(t.name for t in tasks)}"
        + (f", {options.limit} example(s) per task" if options.limit else "")
    )
    summary = ZeroShotSummary()
    finished: dict[int, list[tuple[Path | None, ZeroShotDocument]]] = {}  # in `prepared`: results (None: earlier)
    try:
        _evaluate(prepared, tasks, options, say, summary, finished, report)
    except KeyboardInterrupt:
        summary.interrupted = True
    results = [r for i in sorted(finished) for r in finished[i]]
    summary.docs = [doc for _, doc in results]
    summary.table = table(summary.docs)
    log.append(summary.table.rstrip("\n"))
    if not summary.interrupted:
        echo(table(summary.docs, width).rstrip("\n"))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    text = "\n".join(log) + "\n"
    try:
        with deferred_interrupts():  # each result directory whole, or not at all
            for where, doc in results:
                if where is not None:
                    summary.written.append(
                        write_outputs(_unused(where.with_name(f"{where.name}{stamp}")), doc, summary.table, text)
                    )
    except KeyboardInterrupt:
        summary.interrupted = True
    if summary.interrupted:
        left = [p.target for i, p in enumerate(prepared) if i not in finished]
        raise ZeroShotInterrupted(_kept(summary, left, options))
    return summary


def _evaluate(
    prepared: list[Prepared],
    tasks: list[TaskData],
    options: ZeroShotOptions,
    say: Echo,
    summary: ZeroShotSummary,
    finished: dict[int, list[tuple[Path | None, ZeroShotDocument]]],
    report: Report | None,
) -> None:
    """Each checkpoint's job on the workers, then each recorder run; `finished` fills as each one ends."""
    index = [i for i, p in enumerate(prepared) if p.job is not None]
    jobs = [p.job for p in prepared if p.job is not None]
    for job in jobs:
        if report is not None:
            report(job.label, "waiting", 0, parts(job))
    workers = WorkersUsed()
    count, address = options.workers, options.ray_address
    for j, outcome in run_jobs(jobs, workers, count=count, address=address, report=report) if jobs else ():
        p = prepared[index[j]]
        with deferred_interrupts():  # a checkpoint said finished is kept
            doc = _judge(p, outcome, options, workers.name, say)
            if doc is None:
                summary.failed.append(p.target.label)
            finished[index[j]] = [] if doc is None else [(p.target.results_dir("", options.out), doc)]
    for i, p in enumerate(prepared):
        if p.job is None:
            finished[i] = _recorder_run(p.target, tasks, options, say, summary)


def _unused(directory: Path) -> Path:
    """`directory`, or `directory-2`, `-3`, ... when a result is there already: a second result of the same
    checkpoint (the same label, the same second) is kept beside the first, never in its place."""
    candidate, n = directory, 2
    while candidate.exists():
        candidate, n = directory.with_name(f"{directory.name}-{n}"), n + 1
    return candidate


def _kept(summary: ZeroShotSummary, left: list[Target], options: ZeroShotOptions) -> str:
    """The one line Ctrl-C leaves: what was written, what was not, and how to go on."""
    kept = f"kept the results of {len(summary.written)} finished checkpoint(s)" + (
        " (" + ", ".join(str(w.parent) for w in summary.written) + ")" if summary.written else ""
    )
    if not left:
        return f"zero-shot: interrupted; {kept}; every checkpoint had finished"
    events = [t.label for t in left if t.kind == "recorder-run"]
    if events:  # its harness session records what it scored, and the step it stopped in as interrupted
        kept += f"; {', '.join(events)} keep(s) the eval events of the steps scored"
    return (
        f"zero-shot: interrupted; {kept}; no result directory for {', '.join(t.label for t in left)}: "
        f"run {rerun_command([t.path for t in left], options)}"
    )


def _judge(
    p: Prepared, outcome: JobResult | RecorderError, options: ZeroShotOptions, workers: str, say: Echo
) -> ZeroShotResults | None:
    """The result's document, or None (said why) for a failed load or a holdout gap over the tolerance."""
    t = p.target
    if isinstance(outcome, RecorderError):
        say(f"{t.label}: failed: {outcome}")
        return None
    if outcome.aborted and not math.isfinite(outcome.holdout_loss or 0.0):
        loss = outcome.holdout_loss
        say(f"{t.label}: holdout check failed: recomputed eval/loss {loss}, not a finite loss; not scored")
        return None
    check = _holdout_record(p, outcome, options)
    if outcome.aborted:
        say(
            f"{t.label}: holdout check failed: recomputed eval/loss {check['recomputed']:.6f}, logged "
            f"{check['logged']:.6f} at step {check['step']} in {check['source']}: gap {check['gap']:.6f} > "
            f"{options.max_gap}: weights, tokenizer or model code do not match the training's; not scored"
        )
        return None
    scores = {name: d["score"] for name, d in outcome.tasks.items()}
    commits = commit_record(p.training_commit, outcome.provenance)
    if commits is not None and not commits["same"]:
        say(
            f"{t.label}: the model code's commit {commits['code'] or '(not a git checkout)'} is not the training's "
            f"git_commit {commits['training']} (train_metadata.yaml); recorded in results.json"
        )
    _say_environment(t.label, outcome.environment, say)
    say(
        f"{t.label}: "
        + ", ".join(f"{k} {v:.4f}" for k, v in scores.items())
        + (f"; holdout eval/loss {outcome.holdout_loss:.6f}" if outcome.holdout_loss is not None else "")
    )
    return _document(p, outcome, options, workers, check, scores)


def _say_environment(label: str, environment: dict[str, Any], say: Echo) -> None:
    """A line naming imported module files no installed distribution vouches for (recorded in results.json's
    provenance.environment): code that ran in the scoring process and that neither git nor the install
    records."""
    unrecorded, changed = environment.get("unrecorded") or [], environment.get("changed") or []
    for what, files in (("not in any installed distribution's RECORD", unrecorded), ("changed since install", changed)):
        if files:
            say(f"{label}: imported module file(s) {what}: {', '.join(files)} (recorded in results.json)")


def _holdout_record(p: Prepared, r: JobResult, options: ZeroShotOptions) -> dict[str, Any]:
    plan = p.job.holdout if p.job is not None else None
    if plan is None:
        return {"mode": "off"}
    out: dict[str, Any] = {"mode": options.holdout, "recomputed": r.holdout_loss, **_plan(plan)}
    if p.reference is not None and r.holdout_loss is not None:
        gap = abs(r.holdout_loss - p.reference.value)
        out |= {
            "logged": p.reference.value,
            "step": p.reference.step,
            "source": str(p.reference.source),
            "gap": gap,
            "max_gap": options.max_gap,
            "passed": gap <= options.max_gap,
        }
    return out


def _sources(p: Prepared, r: JobResult) -> dict[str, Any]:
    """Where each setting the scores depend on came from, and how capacity off was confirmed."""
    out = dict(p.sources)
    if r.capacity_check is not None and "capacity" in out:
        out["capacity"] = {**out["capacity"], "confirmed": r.capacity_check}
    if p.job is not None and p.job.holdout is not None:
        out["holdout"] = dict(p.job.holdout.sources)
    return out


def _plan(plan: HoldoutPlan) -> dict[str, Any]:
    return {
        "data": str(plan.data),
        "data_sha256": plan.data_sha256,  # of the bytes the loss was computed over, read once before it
        "seq_len": plan.seq_len,
        "tokens": plan.tokens,
        "world_size": plan.world_size,
        "batch_rows": plan.batch_rows,
        "param_dtype": plan.dtype,
        "capacity": plan.capacity,
        "loss": f"--holdout-fn {plan.hook}" if plan.hook else "built-in",
    }


def _document(
    p: Prepared, r: JobResult, options: ZeroShotOptions, workers: str, check: dict[str, Any], scores: dict[str, float]
) -> ZeroShotResults:
    t, info = p.target, p.target.info
    assert info is not None
    return ZeroShotResults(
        label=t.label,
        scores=scores,
        checkpoint=LoadedCheckpoint(
            path=str(t.path),
            kind=t.kind,
            format=info.format,
            step=info.step,
            run=str(t.run),
            train_world_size=info.world_size,
            manifest=r.manifest,
            tokenizer=r.tokenizer,
        ),
        settings=ZeroShotSettings(
            tasks=tuple(scores),
            limit=options.limit,
            num_fewshot=0,
            dtype=options.dtype,
            device=r.device,
            batch_size=options.batch_size,
            workers=workers,
            capacity=p.job.capacity if p.job is not None and r.provenance is not None else None,
            processes=r.processes if r.processes > 1 else None,
        ),
        code=r.provenance,
        holdout=check,
        sources=_sources(p, r),
        training_commit=commit_record(p.training_commit, r.provenance),
        harness=HarnessVersion(name="lm-eval", version=r.lm_eval_version),
        tasks=r.tasks,
        timings={k: round(v, 6) for k, v in r.timings.items()},
        provenance={**provenance(), "environment": r.environment},
        finished=datetime.now(UTC).isoformat(),
    )


def _recorder_run(
    t: Target, tasks: list[TaskData], options: ZeroShotOptions, say: Echo, summary: ZeroShotSummary
) -> list[tuple[Path | None, ZeroShotDocument]]:
    """A recorder run: the harness session scores its committed checkpoints and records eval events; each
    scored step's (results directory less its time stamp, document), a step scored before (None, its newest
    document)."""
    from evaluator.harness.run_session import HarnessOptions, evaluate_harness
    from evaluator.order import Order
    from evaluator.settings import Options
    from trainer.policy.taskspec import BUILTIN_TASK, shipped

    only = Order("steps", (t.step,)) if t.step is not None else Order("ascending")
    how = HarnessOptions(
        tasks=[x.name for x in tasks],
        examples=options.limit,
        task_data=tuple(tasks),
        evaluation=Options(batch_size=options.batch_size, order=only),
        task=options.task or (None if _trained_here(t.path) else shipped(BUILTIN_TASK)),
    )
    result = evaluate_harness(t.path, how)
    docs: list[tuple[Path | None, ZeroShotDocument]] = []
    for o in result.outcomes:
        label = f"{t.label}/step_{o.step}"
        if o.status == "failed":
            say(f"{label}: failed: {o.reason} {o.error}".rstrip())
            summary.failed.append(label)
            continue
        if o.status != "scored" or o.results is None or o.document is None:
            earlier = _earlier_result(t, o.step, label)
            if earlier is None and o.document is not None:  # scored by `recorder eval --harness`
                earlier = _harness_document(t, o, label, o.document.evaluator_segment, options)
            if earlier is None:
                say(f"{label}: skipped ({o.reason})")
            else:  # in the table as scored before, nothing written again
                say(f"{label}: scored earlier: " + ", ".join(f"{k} {v:.4f}" for k, v in earlier.scores.items()))
                docs.append((None, earlier))
            continue
        say(f"{label}: " + ", ".join(f"{k} {v:.4f}" for k, v in o.scores.items()))
        where = options.out / f"{label.replace('/', '_')}_" if options.out else t.path / RESULTS / step_dir(o.step)
        doc = _harness_document(t, o, label, result.segment, options)
        docs.append((where / f"{PREFIX}_" if not options.out else where, doc))
    return docs


def _earlier_result(t: Target, step: int, label: str) -> ZeroShotDocument | None:
    """The newest zero-shot result of this step of the run, as `recorder collect` finds it."""
    return next((d for d in newest_results(t.path / RESULTS / step_dir(step)) if d.label == label), None)


def _trained_here(run: Path) -> bool:
    """Whether `recorder train` recorded the run (its run_opened config has an eval section). An imported
    series has none; its checkpoints' fingerprints are then checked over the texts they were recorded with
    (the fixed texts, found by their hash), and no benchmark settings are needed for zero-shot scoring."""
    from recorder.store.reader import read_run

    opened = next((e for e in read_run(run).events if e.kind == "run_opened"), None)
    config = (opened.data.get("config") if opened is not None else None) or {}
    return isinstance(config, dict) and isinstance(config.get("eval"), dict)


def _harness_document(
    t: Target, o: StepOutcome, label: str, segment: str | None, options: ZeroShotOptions
) -> ZeroShotStepResults:
    """A scored step of a recorder run, from the harness session's document as it wrote it (never read back)."""
    assert o.results is not None and o.document is not None
    harness = o.document
    ran = harness.settings
    return ZeroShotStepResults(
        label=label,
        scores=o.scores or dict(harness.scores),  # a step scored before: the scores its document holds
        checkpoint=StepCheckpoint(
            path=str(t.path), kind=t.kind, format="recorder", step=o.step, sha256=harness.checkpoint.sha256
        ),
        settings=StepSettings(
            batch_size=ran.batch_size,
            examples_limit=ran.examples_limit,
            max_length=ran.max_length,
            encoding=ran.encoding,
            workers=ran.workers,
            limit=options.limit,
            dtype="fp32",
        ),
        holdout={"mode": "fingerprint", "fingerprint": harness.fingerprint},
        events=RecordedEvents(writer="harness", segment=segment, results=o.results),
        tasks=harness.tasks,
        finished=datetime.now(UTC).isoformat(),
    )
