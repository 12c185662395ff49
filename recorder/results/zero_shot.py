"""`recorder zero-shot`'s results.json, one per result directory (`eval_results/official_lmeval7_<time>/` or under
-o DIR): a checkpoint's scores, the holdout check that allowed them, and what `recorder collect` tabulates.

Two documents share the schema: `ZeroShotResults` for a checkpoint the command loaded and scored itself, and
`ZeroShotStepResults` for a step of a recorder run, scored by a harness session and named by its events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from recorder.results.binding import ResultBinding
from recorder.results.document import Document, Part, ResultsDocError
from recorder.results.harness import HarnessTask
from recorder.results.score_range import require_accuracies

ZERO_SHOT_SCHEMA: Final = "recorder.zero-shot/1"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedCheckpoint(Part):
    """The checkpoint as found on disk: what it is, its format and step, its run, and its files' manifest."""

    path: str
    kind: str  # run, snapshot, archive, checkpoint
    format: str
    step: int | None
    run: str
    train_world_size: int | None
    manifest: Mapping[str, Any]
    tokenizer: Mapping[str, Any] | None = None  # its files as read once and scored: path, each size and sha256


@dataclass(frozen=True, slots=True, kw_only=True)
class ZeroShotSettings(Part):
    """What the command was asked, and where it ran. `capacity` False: the model's code was the checkpoint's."""

    tasks: tuple[str, ...]
    limit: int | None
    num_fewshot: int
    dtype: str
    device: str
    batch_size: int
    workers: str
    capacity: bool | None
    processes: int | None = None  # --nproc: processes one checkpoint's requests were split across (when over 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessVersion(Part):
    """The harness that scored, and its version."""

    name: str
    version: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ZeroShotResults(Document):
    """A checkpoint loaded and scored by `recorder zero-shot`."""

    schema: Literal["recorder.zero-shot/1"] = ZERO_SHOT_SCHEMA
    label: str  # the checkpoint's name in the table
    scores: Mapping[str, float]
    checkpoint: LoadedCheckpoint
    settings: ZeroShotSettings
    code: Mapping[str, Any] | None  # the model code's provenance, when the checkpoint brought its own
    holdout: Mapping[str, Any]  # the loss recomputed on held-out data against the training's logged one
    harness: HarnessVersion
    tasks: Mapping[str, Mapping[str, Any]]
    timings: Mapping[str, float]
    provenance: Mapping[str, Any]
    finished: str  # ISO time
    # where each setting the scores depend on came from (a file and key, an option, the team's declaration)
    sources: Mapping[str, Any] | None = None
    training_commit: Mapping[str, Any] | None = None  # {training, code, same}: train_metadata.yaml's git_commit
    binding: ResultBinding | None = None  # last: what it scored, its digest, its signature (results.binding)

    def __post_init__(self) -> None:
        require_accuracies(self.scores, "scores")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCheckpoint(Part):
    """A recorder run's committed checkpoint at `step`, and the digest the harness session checked."""

    path: str
    kind: str
    format: str
    step: int
    sha256: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StepSettings(Part):
    """The harness session's settings, with the command's examples limit and the dtype it scored in."""

    batch_size: int
    examples_limit: int | None
    max_length: int | None
    encoding: str
    workers: str
    limit: int | None
    dtype: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedEvents(Part):
    """Where the run records the scores: the writer, its segment and the harness session's results.json."""

    writer: str
    segment: str | None
    results: str  # relative to the run


@dataclass(frozen=True, slots=True, kw_only=True)
class ZeroShotStepResults(Document):
    """A step of a recorder run, scored by a harness session: the scores are also the run's eval events."""

    schema: Literal["recorder.zero-shot/1"] = ZERO_SHOT_SCHEMA
    label: str  # "<run>/step_<step>"
    scores: Mapping[str, float]
    checkpoint: StepCheckpoint
    settings: StepSettings
    holdout: Mapping[str, Any]  # the fingerprint check the harness session made
    events: RecordedEvents
    tasks: Mapping[str, HarnessTask]
    finished: str
    binding: ResultBinding | None = None  # what it scored, its digest, its signature (recorder.results.binding)

    def __post_init__(self) -> None:
        require_accuracies(self.scores, "scores")


ZeroShotDocument = ZeroShotResults | ZeroShotStepResults


def scored_manifest(doc: ZeroShotDocument) -> str:
    """The hash of what `doc` says it scored: a loaded checkpoint's manifest root, a recorder step's weights'
    sha256 ("" when the document records none)."""
    if isinstance(doc, ZeroShotStepResults):
        return doc.checkpoint.sha256
    root = doc.checkpoint.manifest.get("root")
    return root if isinstance(root, str) else ""


def scored_code(doc: ZeroShotDocument) -> Mapping[str, Any] | None:
    """The model code's provenance `doc` records (a recorder step: none)."""
    return doc.code if isinstance(doc, ZeroShotResults) else None


def zero_shot_from_json(body: bytes | str) -> ZeroShotDocument:
    """Either zero-shot document, told apart by `events` (only a recorder run's step has it);
    ResultsDocError for anything else."""
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise ResultsDocError(f"not JSON ({e})") from None
    if isinstance(raw, dict) and "events" in raw:
        return ZeroShotStepResults.from_dict(raw)
    return ZeroShotResults.from_dict(raw)
