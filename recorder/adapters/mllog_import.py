"""`recorder import`: any mllog becomes a run. Every line holding ':::MLLOG' is kept verbatim as an
`mllog_line` event (prefix included, malformed JSON too, with its error); the lines replay and history
understand also become their own kinds (run boundaries, blocks, step metrics, evaluations).

Files are read as mlperf-logging's parser reads them (`open(..., encoding='latin-1')`, universal newlines):
a line ends at '\\r\\n', '\\r' or '\\n', so CRLF and CR-only files replay (as-recorded) with LF endings;
each line is UTF-8 when it decodes as UTF-8 (the bytes round-trip) and Latin-1 otherwise (every byte is a
character, as for the parser). A line holding several records is read as the parser reads it: the last
':::MLLOG ' wins (`mllog_format.parse_line`). Nothing else is changed.
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mlperf_logging.mllog import constants as C

from recorder.interrupts import deferred_interrupts
from recorder.rules import finite_score
from recorder.store.kinds import (
    BlockStart,
    BlockStop,
    EvalResult,
    EvalStart,
    EvalStop,
    InitStart,
    InitStop,
    MllogConfig,
    MllogLine,
    Payload,
    RunOpened,
    RunStart,
    RunStop,
    StepMetrics,
    null_if_none,
)
from recorder.store.log import LogWriter
from recorder.store.run import RunDir
from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded
from replay.errors import ImportFileError
from replay.mllog_format import LINE_LIMIT, TOKEN, ParsedLine, parse_line
from replay.ruleset_facts import TRACKED_STATS
from replay.rulesets import get_known, hpc_benchmarks

WRITER = "import"
_BOUNDARIES: dict[str, type[InitStart | InitStop | RunStart]] = {
    C.INIT_START: InitStart,
    C.INIT_STOP: InitStop,
    C.RUN_START: RunStart,
}
_NOT_CONFIG = {None, TRACKED_STATS, C.EVAL_ACCURACY, C.RUN_STOP, C.CACHE_CLEAR}
_INTERVALS: dict[str, Payload] = {
    C.BLOCK_START: BlockStart(),
    C.BLOCK_STOP: BlockStop(),
    C.EVAL_START: EvalStart(),
    C.EVAL_STOP: EvalStop(),
}


@dataclass
class MllogImportReport:
    """What one file became."""

    source: Path
    run: RunDir
    lines: int = 0
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (line_no, why)
    kinds: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


_LINE_END = re.compile(rb"\r\n|\r|\n")  # Python's universal newlines, which the parser's open() uses
_TOKEN_BYTES = TOKEN.encode()


def _decode(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("latin-1")


_GZIP_MAGIC = b"\x1f\x8b"
# An mllog record is a few hundred bytes (the corpus's longest: 359). A longer one is not a record a logger
# wrote: each byte of it costs about fifteen when it is verified, replayed and queried as one event, and
# the compliance checker's time grows with the square of its length (replay.mllog_format.LINE_LIMIT).
MAX_LINE_BYTES = LINE_LIMIT
MLLOG_LIMIT = 256 << 20  # the corpus's largest log is a few MB; a larger file (or a sparse one) is not read


def read_lines(path: Path) -> list[tuple[int, str]]:
    """(line_no, text) of every line holding ':::MLLOG', text without its line ending. A file that is not
    an mllog is refused here, before anything is recorded: empty, compressed, or without one record."""
    if path.is_dir():
        raise ImportFileError(f"{path}: a folder with no result_*.txt; give an mllog file or a result folder")
    try:
        raw = read_bounded(path, MLLOG_LIMIT, "mllog")  # a FIFO is never opened, /dev/zero never read
    except IrregularFileError as e:
        raise ImportFileError(f"{e}; give the path of an mllog file") from e
    if not raw:
        raise ImportFileError(f"{path}: empty file: no :::MLLOG line found; nothing to import")
    if raw.startswith(_GZIP_MAGIC):
        raise ImportFileError(
            f"{path}: gzip-compressed; mlperf-logging's checker and result summarizer read plain text only: "
            f"`gunzip` it and import the text"
        )
    out = []
    for number, line in enumerate(_LINE_END.split(raw), start=1):
        if _TOKEN_BYTES in line:
            if len(line) > MAX_LINE_BYTES:
                raise ImportFileError(
                    f"{path} line {number}: a ':::MLLOG' line of {len(line)} bytes, over the "
                    f"{MAX_LINE_BYTES} a record may have: not a logger's record; nothing imported"
                )
            out.append((number, _decode(line)))
    if not out:
        raise ImportFileError(
            f"{path}: not an mllog: no :::MLLOG line found (no line holds ':::MLLOG'); give a result_N.txt "
            "or a training job's output"
        )
    return out


def _require_a_record(path: Path, parsed: list[tuple[int, ParsedLine]]) -> None:
    """A file whose ':::MLLOG' mentions are all prose (a README, a chat log) is not an mllog."""
    if any(p.record is not None for _, p in parsed):
        return
    shown = ", ".join(str(n) for n, _ in parsed[:5]) + (", ..." if len(parsed) > 5 else "")
    raise ImportFileError(
        f"{path}: not an mllog: no :::MLLOG line found: {len(parsed)} line(s) mention ':::MLLOG' (line {shown}) "
        "but none is followed by a JSON record"
    )


def default_run_id(path: Path) -> str:
    """A readable id that differs for files of the same name: stem and a hash of the absolute path."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", path.stem).strip("._-")[:100] or "mllog"
    return f"{stem}-{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]}"


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _text(x: Any) -> str | None:
    """A submission_* value as run_opened types it: a log that states a non-string states none."""
    return x if isinstance(x, str) else None


def _time_ns(time_ms: int | float | None) -> int | None:
    """time_ms as int64 nanoseconds; None when absent, not finite or out of the event schema's range."""
    if time_ms is None or not math.isfinite(time_ms):
        return None
    ns = int(time_ms * 1_000_000)
    return ns if 0 <= ns < 2**63 else None


def _first_values(parsed: list[ParsedLine]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for p in parsed:
        key = p.key
        if (
            key is not None
            and key in (C.SUBMISSION_BENCHMARK, C.SUBMISSION_DIVISION, C.GLOBAL_BATCH_SIZE)
            and key not in found
        ):
            found[key] = p.get("value")
    return found


class _Recorder:
    """Appends the events of one file, deduplicating facts that many ranks repeat."""

    def __init__(self, writer: LogWriter, report: MllogImportReport, gbs: int | None) -> None:
        self.w, self.report, self.gbs = writer, report, gbs
        self.seen: set[tuple[Any, ...]] = set()
        self.pending: dict[str, Any] | None = None  # step_metrics being merged (consecutive tracked_stats)
        self.config_keys: set[str | None] = set()
        self.boundaries: dict[str, int] = {}  # init_start, init_stop, run_start -> the line of the first

    def step_of(self, meta: dict[str, Any]) -> tuple[int | None, int | None]:
        samples = _int(meta.get(C.SAMPLES_COUNT))
        step = _int(meta.get("step"))
        if step is None:
            step = _int(meta.get(C.EPOCH_NUM))
        if step is None and samples is not None and self.gbs:
            step = samples // self.gbs
        return step, samples

    def add(
        self,
        payload: Payload,
        time_ns: int,
        *,
        step: int | None = None,
        samples: int | None = None,
        key: str | None = None,
        value: Any = None,
        once: bool = True,
    ) -> None:
        kind = payload.KIND
        data = repr(sorted(payload.to_data().items())) if kind == "run_stop" else ""
        fact = (kind, step, samples, key, repr(value), data)
        if once and fact in self.seen:
            return
        self.seen.add(fact)
        self.w.append(payload, step=step, samples_count=samples, key=key, value=value, time_ns=time_ns)
        self.report.kinds[kind] = self.report.kinds.get(kind, 0) + 1

    def flush(self) -> None:
        if self.pending is not None:
            p, self.pending = self.pending, None
            # the log's own names, by the same split any reader makes (ours where they fit, the rest in stats)
            metrics = StepMetrics.from_data(p["data"], where=f"tracked_stats of step {p['step']}")
            self.add(metrics, p["time_ns"], step=p["step"], samples=p["samples"], once=False)

    def recognize(self, p: ParsedLine, time_ns: int, line_no: int) -> None:
        key, meta, value = p.key, p.metadata, p.get("value")
        step, samples = self.step_of(meta)
        if key == TRACKED_STATS and samples is not None and isinstance(p.get("value"), dict):
            if self.pending is not None and (self.pending["step"], self.pending["samples"]) == (step, samples):
                self.pending["data"].update(p.get("value"))
                return
            self.flush()
            self.pending = {"time_ns": time_ns, "step": step, "samples": samples, "data": dict(p.get("value"))}
            return
        self.flush()
        if key in _BOUNDARIES:
            first = self.boundaries.setdefault(key, line_no)
            if first != line_no:  # the checker warns of it: so does the import, and replay keeps that warning
                self.report.warnings.append(
                    f"{self.report.source}:{line_no}: a second {key} (the first at line {first}): the "
                    f"compliance checker requires exactly one; replay --check reports its warning"
                )
            self.add(_BOUNDARIES[key](line_no=line_no), time_ns)
        elif key in _INTERVALS:
            self.add(_INTERVALS[key], time_ns, step=step, samples=samples)
        elif key == C.EVAL_ACCURACY and finite_score(value) is not None:
            self.add(EvalResult(line_no=line_no), time_ns, step=step, samples=samples, key="accuracy", value=value)
        elif key == C.EVAL_ACCURACY and isinstance(value, (int, float)) and not isinstance(value, bool):
            # NaN, an infinity, 1e400, a 400-digit integer: kept as the log's line (evidence), never a score
            self.report.warnings.append(
                f"{self.report.source}:{line_no}: eval_accuracy is not a finite number: not recorded as a score"
            )
        elif key == C.RUN_STOP:
            stop = RunStop(status=meta.get(C.STATUS), line_no=line_no, time_ms=p.time_ms)
            self.add(stop, time_ns, step=step, samples=samples)
        elif p.get("event_type") == C.POINT_IN_TIME and key not in _NOT_CONFIG and key not in self.config_keys:
            # Configuration (submission_*, hyperparameters, disclosures): the first value of each key, so
            # that re-deriving an imported run (official, checker-order, ...) states what the log stated.
            self.config_keys.add(key)
            self.add(MllogConfig(), time_ns, key=key, value=value)


@dataclass(frozen=True)
class ResultSet:
    """What a result folder adds to each of its runs: the review's scaling factor and the system description."""

    folder: str
    scaling_factor: float = 1.0  # scaling.json's, else 1.0 (the summarizer's `_get_scaling_factor`)
    scaling_file: str | None = None
    system: str | None = None  # the folder above the benchmark folder
    system_description: dict[str, Any] | None = None  # ../../systems/<system>.json when present


def import_file(
    path: Path,
    root: Path,
    run_id: str | None = None,
    ruleset: str | None = None,
    result_set: ResultSet | None = None,
) -> MllogImportReport:
    """Import one mllog as a new run under `root`. A ruleset (typed by the user) must be one the installed
    checker ships (the caller checks the name); one that does not know the log's benchmark is a warning."""
    numbered = read_lines(path)
    parsed = [(n, p) for n, line in numbered if (p := parse_line(line)) is not None]
    _require_a_record(path, parsed)
    firsts = _first_values([p for _, p in parsed])
    stated = firsts.get(C.SUBMISSION_BENCHMARK)
    if isinstance(stated, str) and stated in hpc_benchmarks():
        raise ImportFileError(
            f"{path}: HPC not supported: {stated!r} is an MLPerf HPC benchmark; this recorder imports, replays and "
            "scores MLPerf Training logs only"
        )
    problem = None
    if ruleset is not None:  # the log is evidence: kept even where the ruleset does not know its benchmark
        benchmark, division = firsts.get(C.SUBMISSION_BENCHMARK), firsts.get(C.SUBMISSION_DIVISION)
        problem = get_known(ruleset).benchmark_problem(
            benchmark if isinstance(benchmark, str) else None, division if isinstance(division, str) else None
        )
    gbs = _int(firsts.get(C.GLOBAL_BATCH_SIZE))
    times = [t for _, p in parsed if (t := _time_ns(p.time_ms)) is not None]
    last_ns = times[0] if times else 0
    run: RunDir | None = None
    try:
        with deferred_interrupts():  # the folder and `run` naming it for the removal below, or neither
            run = RunDir.create(root, run_id or default_run_id(path))
        report = MllogImportReport(path, run)
        if problem is not None:
            report.warnings.append(f"{problem}: replay --check reports the checker's verdict; score refuses the run")
        # The file is the record and stays where it is: one fsync at close (recorder/store/log.py's durability policy).
        with LogWriter(run, WRITER, clock=lambda: last_ns, durability="at-close") as w:
            opened = RunOpened(
                benchmark=_text(firsts.get(C.SUBMISSION_BENCHMARK)),
                ruleset=ruleset,
                division=_text(firsts.get(C.SUBMISSION_DIVISION)),
                global_batch_size=gbs,
                config={},
                provenance={"imported_from": str(path)},
                resumed_from=None,
            )
            if result_set is not None:  # the folder's five keys together, null where it has no value
                opened = replace(
                    opened,
                    result_set=result_set.folder,
                    scaling_factor=result_set.scaling_factor,
                    scaling_file=null_if_none(result_set.scaling_file),
                    system=null_if_none(result_set.system),
                    system_description=null_if_none(result_set.system_description),
                )
            w.append(opened, time_ns=last_ns)
            rec = _Recorder(w, report, gbs)
            for line_no, p in parsed:
                now = _time_ns(p.time_ms)
                if now is not None:  # lines without a usable time_ms keep the previous line's time
                    last_ns = now
                step, samples = rec.step_of(p.metadata)
                if p.error:
                    report.malformed.append((line_no, p.error))
                elif p.records > 1:
                    report.malformed.append(
                        (line_no, f"{p.records} records on one line: mlperf-logging's parser reads only the last")
                    )
                line = MllogLine(
                    line=p.text,
                    file=str(path),
                    line_no=line_no,
                    time_ms=p.time_ms,
                    event_type=p.get("event_type"),
                    metadata=p.get("metadata"),
                    error=p.error,
                )
                w.append(line, step=step, samples_count=samples, key=p.key, value=p.get("value"), time_ns=last_ns)
                report.lines += 1
                if p.error is None:
                    rec.recognize(p, last_ns, line_no)
            rec.flush()
    except BaseException:  # Ctrl-C or a failure mid-file: no half-imported run is left (the file is the record)
        if run is not None:
            with deferred_interrupts():  # a second Ctrl-C waits until the half-read run is gone
                shutil.rmtree(run.path, ignore_errors=True)
        raise
    return report
