"""Typed event payloads: one frozen dataclass per kind's `data` in `schemas/catalogue.toml`, the one place a
kind's keys (its fields) and its upcasts (its `upcast_v<N>_...` static methods, applied by recorder.store.upcast) are
declared; the catalogue says who writes a kind, when, whether it is critical, and what each key holds.

Producers build `data` through these classes (`LogWriter.append(payload, ...)` takes the kind from the
class), so a misspelled kind or key fails where it is written. Consumers parse through `from_event`, which
checks every type and names the segment and seq of a malformed payload.

A field without a default is a key every writer records (its value may be null where the type allows).
A field that defaults to None is a key some writers leave out: `to_data` leaves it out when None, and an
older segment that lacks it still reads. `to_data()` gives the exact dict that was recorded, so canonical
bytes, and with them every digest chain, are unchanged.

Non-finite floats are recorded as the strings "NaN", "Infinity", "-Infinity" (see recorder.store.canonical);
`from_event` turns them back into floats, and `to_data` back into the same strings on the way out.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from typing import Any, ClassVar, Literal, Self, TypeVar, get_type_hints

from recorder.checkpoints.formats import CheckpointFormat
from recorder.errors import DataError
from recorder.store.codec import Dialect, Mismatch, decode, taken_as_is
from recorder.store.events import Event
from recorder.store.upcast import upcast


class PayloadError(DataError):
    """An event's `data` that does not match its kind's payload class (a key missing, a wrong type)."""


class Null(enum.Enum):
    """A key recorded as JSON null where leaving the key out means something else (see InitStart.warmup)."""

    NULL = "null"


NULL = Null.NULL
T = TypeVar("T")


def null_if_none(value: T | None) -> T | Null:
    """`value`, or NULL: for a key recorded as null rather than left out."""
    return NULL if value is None else value


TrainStatus = Literal["completed", "failed", "interrupted"]
Source = Literal["trl", "nemo-rl", "fsdp2"]  # the adapter that wrote a run's events
Timing = Literal["meta", "shard-mtime"]  # where an imported weight-update time came from
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_FLATTEN = "flatten"  # field metadata: a mapping whose entries are keys of `data` itself


@dataclass(frozen=True, slots=True, kw_only=True)
class Payload:
    """Base of every payload class. `KIND` is the catalogue kind; subclasses add the keys as fields."""

    KIND: ClassVar[str] = ""

    def to_data(self) -> dict[str, Any]:
        """The `data` object as recorded: optional keys that are None left out, nested payloads as dicts."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get(_FLATTEN):
                out.update(value)
            elif value is None and f.default is None:
                continue
            else:
                out[f.name] = _plain(value)
        return out

    @classmethod
    def from_event(cls, event: Event) -> Self:
        """The payload of `event` in today's shape (older payloads upcast on read: recorder.store.upcast); PayloadError
        naming the segment and seq if it does not match. `to_data` of it is what was recorded, plus what the
        upcast filled in."""
        where = f"{event.segment or event.writer} seq {event.seq} ({event.kind})"
        if event.kind != cls.KIND:
            raise PayloadError(f"{where}: not a {cls.KIND} event")
        return cls.from_recorded(event.data, where=where)

    @classmethod
    def from_recorded(cls, data: Mapping[str, Any] | None, *, where: str = "") -> Self:
        """The payload of `data` as an event of this kind recorded it, in today's shape (older payloads upcast
        on read: recorder.store.upcast); PayloadError prefixed by `where`."""
        return cls.from_data(upcast(cls, data), where=where)

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, where: str = "") -> Self:
        """Parse a `data` object; `where` prefixes the error (e.g. 'trainer-0001.arrows seq 7')."""
        types_, fast, required, flat = _spec(cls)
        values: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for name, raw in data.items():
            tp = types_.get(name)
            if tp is None:
                if flat is None:
                    allowed = ", ".join(types_) or "none"
                    raise PayloadError(f"{where}: unexpected key {name!r} in {cls.KIND} data (keys: {allowed})")
                rest[name] = raw
                continue
            try:
                values[name] = raw if type(raw) in fast[name] else decode(raw, tp, name, EVENTS)
            except Mismatch as e:
                if flat is not None:  # a foreign trainer's value under one of our names: kept by its own name
                    rest[name] = raw
                    continue
                raise PayloadError(f"{where}: {cls.KIND} data: {e}") from None
        if not required.issubset(values):
            missing = [n for n in types_ if n in required and n not in values]
            raise PayloadError(f"{where}: {cls.KIND} data lacks {', '.join(missing)}")
        if flat is not None:
            values[flat] = rest
        return cls(**values)


_Spec = tuple[dict[str, Any], dict[str, frozenset[type]], frozenset[str], str | None]
_SPECS: dict[type, _Spec] = {}


def _nested(tp: Any, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise EVENTS.mismatch(where, raw, tp)
    try:
        return tp.from_data(raw, where=where)
    except PayloadError as e:
        raise Mismatch(str(e)) from None


EVENTS = Dialect(
    null=Null,
    non_finite=_NON_FINITE,
    is_nested=lambda tp: isinstance(tp, type) and is_dataclass(tp) and issubclass(tp, Payload),
    nested=_nested,
)


def _spec(cls: type) -> _Spec:
    """Per class: the type of each documented key, the JSON types it takes as they are (the fast path),
    the keys every writer records, and the flattened field."""
    if cls not in _SPECS:
        hints = get_type_hints(cls)
        flat = next((f.name for f in fields(cls) if f.metadata.get(_FLATTEN)), None)
        types_ = {f.name: hints[f.name] for f in fields(cls) if f.name != flat}
        required = frozenset(
            f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING and f.name != flat
        )
        _SPECS[cls] = (types_, {n: taken_as_is(tp, EVENTS) for n, tp in types_.items()}, required, flat)
    return _SPECS[cls]


def _plain(value: Any) -> Any:
    if value is NULL:
        return None
    if isinstance(value, Payload):
        return value.to_data()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value


# -- the kinds, in catalogue order -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOpened(Payload):
    """First event of a run. Imports leave benchmark, division, global_batch_size null when the log lacks them.

    `target` is the pass target the run is evaluated against (older runs lack it: config.eval.target). An
    import of a result folder records the folder's five keys together, null where it has no value (NULL).
    Older payloads are read in today's shape by the `upcast_v1_*` steps below (recorder.store.upcast applies them).
    """

    KIND: ClassVar[str] = "run_opened"
    benchmark: str | None
    ruleset: str | None
    division: str | None
    global_batch_size: int | None
    target: float | None = None
    config: Mapping[str, Any]
    provenance: Mapping[str, Any]
    resumed_from: str | None
    resumed_at_step: int | None = None
    resumed_checkpoint: str | None = None
    optimizer: str | None = None
    set_aside: tuple[str, ...] | None = None
    source: Source | None = None
    result_set: str | None = None
    scaling_factor: float | None = None
    scaling_file: str | Null | None = None
    system: str | Null | None = None
    system_description: Mapping[str, Any] | Null | None = None

    @staticmethod
    def upcast_v1_target(data: dict[str, Any]) -> dict[str, Any]:
        """`target` (the pass target the run is evaluated against): runs recorded before it hold it only in the
        resolved config's `eval.target`."""
        section = _eval_section(data)
        if data.get("target") is None and section is not None and section.get("target") is not None:
            return data | {"target": section["target"]}
        return data

    @staticmethod
    def upcast_v1_eval_task(data: dict[str, Any]) -> dict[str, Any]:
        """`config.eval.task` (the task spec the evaluation scores): runs recorded before it name their spec in
        the config's top-level `task`."""
        section, config = _eval_section(data) or {}, data.get("config")
        if "task" in section or not isinstance(config, Mapping) or not isinstance(config.get("task"), str):
            return data
        return data | {"config": dict(config) | {"eval": dict(section) | {"task": config["task"]}}}


def _eval_section(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A run_opened's `config.eval`, when it is a mapping."""
    config = data.get("config")
    section = config.get("eval") if isinstance(config, Mapping) else None
    return section if isinstance(section, Mapping) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class MllogConfig(Payload):
    """One mllog configuration key; the key and its value are the event's `key` and `value` columns."""

    KIND: ClassVar[str] = "mllog_config"


@dataclass(frozen=True, slots=True, kw_only=True)
class Warmup(Payload):
    """The supervised initialization the trainer made before init_start (nested in InitStart)."""

    KIND: ClassVar[str] = ""
    batches: int
    dev_accuracy: float
    cached: bool
    seconds: float
    cache_path: str | None
    sha256: str | None = None  # of the init's weights as loaded (left out by runs recorded before it)


@dataclass(frozen=True, slots=True, kw_only=True)
class InitStart(Payload):
    """Start of initialization. The trainer records `warmup` (NULL: none was made); imports the line_no."""

    KIND: ClassVar[str] = "init_start"
    line_no: int | None = None
    warmup: Warmup | Null | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InitStop(Payload):
    """End of initialization; imports record the mllog line it came from."""

    KIND: ClassVar[str] = "init_stop"
    line_no: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStart(Payload):
    """Start of the timed region; imports record the mllog line it came from."""

    KIND: ClassVar[str] = "run_start"
    line_no: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockStart(Payload):
    """Before the first training step of a block."""

    KIND: ClassVar[str] = "block_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockStop(Payload):
    """After the final step of a block."""

    KIND: ClassVar[str] = "block_stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepMetrics(Payload):
    """One training step's numbers. Every key is optional: foreign trainers log some of them.

    `stats` holds what an imported log tracked under its own names (`reduced_train_loss`, ...): they are
    keys of `data` itself, beside ours, as the importer found them.
    """

    KIND: ClassVar[str] = "step_metrics"
    loss: float | None = None
    reward: float | None = None
    grad_norm: float | None = None
    tokens: float | None = None
    samples: int | None = None
    generation_s: float | None = None
    train_s: float | None = None
    refit_s: float | None = None
    checkpoint_block_s: float | None = None
    step_s: float | None = None
    extra: Mapping[str, float] | None = None
    stats: Mapping[str, Any] = field(default_factory=dict, metadata={_FLATTEN: True})


@dataclass(frozen=True, slots=True, kw_only=True)
class RankStep(Payload):
    """One data-parallel rank's own step, in its own segment (`trainer-rank<R>`); rank 0 records the run's.

    `optimizer_done_ns` is when this rank's optimizer step finished (the run's weight_update is the last
    rank's, taken after a barrier). `gather_s` is its part in gathering the full weights from every shard
    (the rollout copy and, on checkpoint steps, the consolidated checkpoint rank 0 writes)."""

    KIND: ClassVar[str] = "rank_step"
    rank: int
    world_size: int
    prompts: int
    samples: int
    tokens: int
    generation_s: float
    train_s: float
    optimizer_done_ns: int
    gather_s: float
    checkpoint_block_s: float
    step_s: float
    shard_bytes: int
    checkpoint: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightUpdate(Payload):
    """The optimizer step returned: the event's time_ns is the weight-update time. Adapters add source."""

    KIND: ClassVar[str] = "weight_update"
    source: Source | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointCommitted(Payload):
    """A checkpoint is durable: its files fsynced and renamed into place. Times are Unix-epoch ns."""

    KIND: ClassVar[str] = "checkpoint_committed"
    path: str  # relative to the run directory
    sha256: str
    bytes: int
    weight_update_ns: int | None
    save_begin_ns: int | None
    save_end_ns: int
    blocked_ns: int | None
    fingerprint: Mapping[str, Any]
    format: CheckpointFormat
    dtype: str | None
    source: Source | None = None
    prompts: int | None = None
    files: Mapping[str, str] | None = None  # the trainer's config.json and tokenizer.json: name -> sha256
    # every shard's path, bytes and sha256 with `root` (= sha256) over the list (recorder.checkpoints.manifest)
    manifest: Mapping[str, Any] | None = None
    timing: Timing | None = None  # imports that do not read it from a training log: its source


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainStop(Payload):
    """Training ended; `reason` is '' when it completed."""

    KIND: ClassVar[str] = "train_stop"
    status: TrainStatus
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalStart(Payload):
    """An evaluation of one checkpoint begins. Imports record none of the keys."""

    KIND: ClassVar[str] = "eval_start"
    checkpoint: str | None = None
    sha256: str | None = None
    worker: str | int | None = None
    harness: Literal["lm-eval"] | None = None
    tasks: tuple[str, ...] | None = None
    # benchmark sessions: the task spec that scores this attempt, and how completions are generated
    task: str | None = None
    task_sha256: str | None = None
    backend: Literal["torch", "vllm", "command"] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalResult(Payload):
    """A score; the metric name and score are the event's `key` and `value` columns."""

    KIND: ClassVar[str] = "eval_result"
    metric: str | None = None
    n: int | None = None
    k: int | None = None
    target: float | None = None
    results: str | None = None
    results_sha256: str | None = None
    harness: Literal["lm-eval"] | None = None
    num_fewshot: int | None = None
    line_no: int | None = None
    task: str | None = None
    task_sha256: str | None = None
    backend: Literal["torch", "vllm", "command"] | None = None
    # whether completions are the same whatever the batch size: torch by construction, vllm as measured on
    # this checkpoint (evaluator/vllm_engine/vllm_backend.py); left out where unknown (the submitter's command)
    batch_invariant: bool | None = None
    unverified: str | None = None  # eval --force on a run that fails verify: the first problem verify found
    dtype: str | None = None  # the weights' dtype as evaluated ("bf16", "fp32"), and where they ran
    device: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalStop(Payload):
    """An evaluation of one checkpoint ended."""

    KIND: ClassVar[str] = "eval_stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalFailed(Payload):
    """An evaluation produced no score. `interrupted_segment` closes a killed session's open eval_start."""

    KIND: ClassVar[str] = "eval_failed"
    reason: str
    error: str
    interrupted_segment: str | None = None
    # --backend command: what ran and how it ended (evaluator/command.py)
    command: str | None = None
    exit_status: int | None = None
    stdout_sha256: str | None = None
    stderr_sha256: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MllogLine(Payload):
    """One ':::MLLOG' line, verbatim, with what parsing it found (`error`: why its JSON did not parse)."""

    KIND: ClassVar[str] = "mllog_line"
    line: str
    file: str | None
    line_no: int
    time_ms: float | None
    event_type: Any  # what the line's JSON says, whatever its type
    metadata: Any
    error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentOpened(Payload):
    """First event (seq 0) of a signed segment: the public key its closing record is signed with."""

    KIND: ClassVar[str] = "segment_opened"
    public_key: str
    algorithm: Literal["ed25519"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainSigned(Payload):
    """A signed segment's durable point: segment_opened's key over this record's digest without the
    signature (recorder.signing), vouching for every event before it."""

    KIND: ClassVar[str] = "chain_signed"
    signature: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentClosed(Payload):
    """Last event of a segment; `events` counts the events before it. `signature` (signed segments only):
    segment_opened's key over this record's digest without the signature (recorder.signing)."""

    KIND: ClassVar[str] = "segment_closed"
    events: int
    signature: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStop(Payload):
    """An imported mllog's run_stop line; `status` is its metadata status, whatever the log wrote."""

    KIND: ClassVar[str] = "run_stop"
    status: Any
    line_no: int
    time_ms: float | None


PAYLOADS: dict[str, type[Payload]] = {
    cls.KIND: cls
    for cls in (
        RunOpened,
        MllogConfig,
        InitStart,
        InitStop,
        RunStart,
        BlockStart,
        BlockStop,
        StepMetrics,
        RankStep,
        WeightUpdate,
        CheckpointCommitted,
        TrainStop,
        EvalStart,
        EvalResult,
        EvalStop,
        EvalFailed,
        MllogLine,
        SegmentOpened,
        ChainSigned,
        SegmentClosed,
        RunStop,
    )
}


def payload(event: Event) -> Payload:
    """The typed payload of any event, by its kind."""
    cls = PAYLOADS.get(event.kind)
    if cls is None:
        raise PayloadError(f"{event.segment} seq {event.seq}: unknown event kind {event.kind!r}")
    return cls.from_event(event)
