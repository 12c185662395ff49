"""What every import of a checkpoint series trained elsewhere shares: one `weight_update` and one
`checkpoint_committed` per checkpoint, appended to a run (created when missing), with `run_opened` for a new
run and `train_stop` at the final checkpoint's step unless the run has one.

The importers (recorder.adapters.nemo: NeMo-RL's `step_N/`; recorder.adapters.dcp: an FSDP2 job's torch DCP
archives and snapshots) read their layout into `SeriesCommit`s, fingerprint every checkpoint before anything
is written, and hand the list to `write_series`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

from recorder.adapters.log_series_join import SeriesStep, check_join
from recorder.checkpoints.formats import CheckpointFormat
from recorder.errors import DataError, InputError
from recorder.interrupts import deferred_interrupts
from recorder.rules import validation_start_step
from recorder.store.kinds import CheckpointCommitted, RunOpened, Source, Timing, TrainStop, WeightUpdate
from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.untrusted.copy_temp_files import is_copy_temp

# a checkpoint directory's (fingerprint record, manifest of the weights hashed while loaded, or None)
Fingerprinter = Callable[[Path], tuple[dict[str, Any], dict[str, Any] | None]]
INT64_MAX: Final = 2**63 - 1  # events store steps, samples and times as int64


class AlreadyImportedError(InputError):
    """A run that already holds checkpoint commits for the steps being imported."""


class SeriesNotCompliantError(DataError):
    """`--strict`: a series that breaks the rule, refused before anything is written."""


def refuse_if_strict(root: Path, problems: list[str], strict: bool) -> None:
    """SeriesNotCompliantError naming every problem when `strict` and the series has any."""
    if strict and problems:
        raise SeriesNotCompliantError(
            f"{root}: the series breaks the 6.1 rule: {'; '.join(problems)} (--strict: nothing written)"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SeriesCommit:
    """One checkpoint of a series, as its commit will record it. Times are Unix-epoch ns."""

    step: int
    samples: int
    path: Path  # the checkpoint directory, wherever it lives
    weight_update_ns: int
    save_end_ns: int
    sha256: str
    bytes: int
    fingerprint: Mapping[str, Any]
    format: CheckpointFormat
    dtype: str | None
    source: Source | None  # None: an importer the project does not ship (a format plugin's)
    prompts: int | None = None
    manifest: Mapping[str, Any] | None = None
    timing: Timing | None = None
    files: Mapping[str, str] | None = None  # what loading reads besides the shards: path from `path` -> sha256
    record: Path | None = None  # the file the step, samples and time were read from (else `path`)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedFiles:
    """What a fingerprinter's manifest says besides the shards: the files loading read besides them (hashed
    into the commit), and the shard files no `.metadata` names (left out of the manifest, named)."""

    manifest: dict[str, Any]  # {root, shards}: what the commit records
    files: dict[str, str] | None  # path from the checkpoint directory -> sha256
    left_out: list[str]  # paths from the checkpoint directory


def loaded_files(manifest: Mapping[str, Any]) -> LoadedFiles:
    """The fingerprinter's manifest split into what the commit records as its manifest, its files, and the
    shards left out."""
    files = manifest.get("files")
    left = manifest.get("left_out")
    return LoadedFiles(
        manifest={k: v for k, v in manifest.items() if k not in ("files", "left_out")},
        files=dict(files) if isinstance(files, dict) and files else None,
        left_out=[str(p) for p in left] if isinstance(left, list) else [],
    )


def left_out_warning(path: Path, left_out: list[str]) -> str:
    """The line naming the files of checkpoint `path` left out of its manifest (never empty `left_out`):
    shard files no `.metadata` names, and copy tools' temporary files."""
    temps = [p for p in left_out if is_copy_temp(PurePosixPath(p))]
    strays = [p for p in left_out if p not in temps]
    said = []
    if strays:
        said.append(
            f"{len(strays)} shard file{'s' if len(strays) > 1 else ''} that its .metadata does not name left out "
            f"of the manifest (never read): {_shown(strays)}"
        )
    if temps:
        said.append(
            f"{len(temps)} copy tool's temporary file{'s' if len(temps) > 1 else ''} (a copy not finished or "
            f"stopped) left out of the manifest (never read): {_shown(temps)}"
        )
    return f"{path}: " + "; ".join(said)


def _shown(paths: list[str]) -> str:
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def step_problems(steps_samples: list[tuple[int, int]], gbs: int, gap_hint: str) -> list[str]:
    """Departures from the rule, for (step, samples after it) ascending by step: the series must start at
    the validation start, have no gaps (`gap_hint`: the likely cause, in the layout's words), and have
    consumed step x GBS samples at every step."""
    start = validation_start_step(gbs)
    steps = [s for s, _ in steps_samples]
    problems = []
    if steps[0] != start:
        problems.append(f"the series starts at step {steps[0]}, not at the validation start {start} (GBS {gbs})")
    missing = sorted(set(range(max(start, steps[0]), steps[-1] + 1)) - set(steps))
    if missing:
        problems.append(f"missing checkpoints for steps {', '.join(map(str, missing))} ({gap_hint})")
    for step, samples in steps_samples:
        if samples != step * gbs:
            problems.append(f"step {step}: {samples} samples consumed, expected step x GBS = {step * gbs}")
    return problems


def written_ns(files: list[Path]) -> int:
    """The newest modification time of `files`: when the checkpoint's write finished, as the file system saw it."""
    return max(p.stat().st_mtime_ns for p in files)


def relative(path: Path, run: RunDir) -> str:
    """`path` relative to the run directory, even when the series lives outside it (the path must resolve
    from the run directory)."""
    return Path(os.path.relpath(path.resolve(), run.path.resolve())).as_posix()


def check_log_agrees(into: Path, gbs: int | None, steps: list[SeriesStep]) -> None:
    """Before any checkpoint is loaded: LogSeriesMismatchError where the run `into` (if it exists) holds a
    training log that `steps` disagree with (write_series checks again, on what it writes)."""
    if into.exists():
        run = RunDir.open(into)
        check_join(run.path, read_run(run).events, gbs, steps)


def _open_run(into: Path, opened: RunOpened, commits: list[SeriesCommit]) -> tuple[RunDir, set[str], set[int]]:
    """The run (created when missing), the kinds it already holds, and the steps it already committed; a run
    whose training log disagrees with the series is refused (log_series_join)."""
    if not into.exists():
        return RunDir.create(into.parent, into.name), set(), set()
    run = RunDir.open(into)
    events = read_run(run).events
    steps = [SeriesStep(c.step, c.samples, c.weight_update_ns, c.record or c.path) for c in commits]
    check_join(run.path, events, opened.global_batch_size, steps)
    return run, {e.kind for e in events}, {e.step for e in events if e.kind == "checkpoint_committed" and e.step}


def write_series(into: Path, writer: str, opened: RunOpened, commits: list[SeriesCommit]) -> tuple[RunDir, set[str]]:
    """Append the series to the run `into` (created if missing); (the run, the kinds it held before).

    `opened` is recorded (at the first weight update) only when the run has no run_opened yet. A run that
    already committed any of the steps is refused before anything is written."""
    try:
        with deferred_interrupts():  # a new run's folder and its run_opened, or neither
            run, kinds, committed = _open_run(into, opened, commits)
            clash = sorted(committed & {c.step for c in commits})
            if clash:
                raise AlreadyImportedError(
                    f"{run.path}: steps {', '.join(map(str, clash))} already have checkpoint "
                    "commits; import into a new run directory"
                )
            log = LogWriter(run, writer)
            if "run_opened" not in kinds:
                log.append(opened, time_ns=commits[0].weight_update_ns)
    except KeyboardInterrupt:  # raised after the block completed: its segment is closed, as below
        log.close()
        raise
    with log:
        for c in commits:
            _commit(log, run, c)
        if "train_stop" not in kinds:
            last = commits[-1]
            stop = TrainStop(status="completed", reason="")
            log.append(stop, step=last.step, samples_count=last.samples, time_ns=last.weight_update_ns)
    return run, kinds


def _commit(log: LogWriter, run: RunDir, c: SeriesCommit) -> None:
    log.append(WeightUpdate(source=c.source), step=c.step, samples_count=c.samples, time_ns=c.weight_update_ns)
    committed = CheckpointCommitted(
        path=relative(c.path, run),
        sha256=c.sha256,
        bytes=c.bytes,
        weight_update_ns=c.weight_update_ns,
        save_begin_ns=None,
        save_end_ns=c.save_end_ns,
        blocked_ns=None,
        fingerprint=c.fingerprint,
        format=c.format,
        dtype=c.dtype,
        source=c.source,
        prompts=c.prompts,
        manifest=c.manifest,
        timing=c.timing,
        files=c.files,
    )
    log.append(committed, step=c.step, samples_count=c.samples, time_ns=c.save_end_ns)
