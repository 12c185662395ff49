"""A zero-shot harness session's results.json, one per scored step under
`derived/evals/step_NNNNNNN/harness/<segment>/`: every task's score with the per-example evidence lm-eval
gave, the checkpoint as checked, how text became tokens, provenance and timings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from recorder.results.document import Document, Part
from recorder.results.evaluation import ScoredCheckpoint

HARNESS_SCHEMA: Final = "recorder.eval.harness/1"


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessInfo(Part):
    """Which harness scored, at which version, with how many examples in the prompt, and how it scores."""

    name: str
    version: str | None
    num_fewshot: int
    scoring: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessSettings(Part):
    """How the session ran: batch size, the examples limit per task (a smoke test), what the model reads."""

    batch_size: int
    examples_limit: int | None
    max_length: int | None  # positions the model was built for
    encoding: str  # how text became tokens
    workers: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessTask(Part):
    """One task's score and its evidence: the data it read (and their hashes), per-example rows from lm-eval."""

    metric: str
    score: float
    n: int  # examples scored
    of: int  # examples in the task
    metrics: Mapping[str, float]
    version: Any  # the task's version as lm-eval states it
    data_file: str
    data_files: tuple[str, ...] | None = None  # a task read from several files (a Hugging Face cache)
    data_sha256: str
    content_sha256: str | None = None  # the rows' hash, whatever files hold them (how the task is known)
    config_sha256: str
    samples: tuple[Mapping[str, Any], ...]  # per example: hashes, log-likelihoods, outcomes


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessResults(Document):
    """A checkpoint scored on lm-eval tasks by a harness session (writer "harness")."""

    schema: Literal["recorder.eval.harness/1"] = HARNESS_SCHEMA
    run_id: str
    step: int
    samples_count: int | None
    harness: HarnessInfo
    scores: Mapping[str, float]  # per task, in the order asked
    settings: HarnessSettings
    checkpoint: ScoredCheckpoint
    fingerprint: Mapping[str, Any]
    provenance: Mapping[str, Any]
    timings: Mapping[str, float]
    evaluator_segment: str
    tasks: Mapping[str, HarnessTask]
