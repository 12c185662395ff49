"""The benchmark evaluator's results.json, under `derived/evals/step_NNNNNNN/`: the evidence behind one score.

`PassAtKResults` holds what a reviewer needs to re-check a pass@k score without trusting the evaluator: the
checkpoint's path and hash, the task set's hash, a hash of every prompt, completion and target with its
outcome, the sampling settings, the fingerprint comparison (or that it was skipped), the code's provenance
and the timings. `CommandResults` is the same schema for `--backend command`: the submitter's command scored,
so it holds that command's score, the records it chose to give and how the command ran (in `provenance`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from recorder.results.document import Document, Part

EVAL_SCHEMA: Final = "recorder.eval.results/1"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitRecord(Part):
    """The checkpoint_committed event a scored checkpoint was found by."""

    segment: str
    seq: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoredCheckpoint(Part):
    """The checkpoint as committed (path relative to the run) and the digest its weights were checked against:
    the manifest's root for a sharded commit, the one file's sha256 otherwise."""

    path: str
    sha256: str
    bytes: int | None
    dtype: str | None
    weight_update_ns: int | None
    committed: CommitRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingSettings(Part):
    """How completions were sampled; `seeds` names the per-sample seed derivation."""

    temperature: float
    top_p: float
    max_new_tokens: int
    batch_size: int
    workers: str
    seeds: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSet(Part):
    """The validation tasks scored: `n` of the spec's `of`, and the hash of their (prompt, answer) list."""

    name: str
    n: int
    of: int
    sha256: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SampleRow(Part):
    """One completion as evidence: the hashes of its prompt, text and target, its seed, reward and outcome."""

    task: int
    sample: int
    seed: int
    prompt_sha256: str
    completion_sha256: str
    target_sha256: str
    reward: float
    correct: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalResults(Document):
    """What every benchmark evaluation's results.json starts with: which checkpoint of which run, and its
    score. The two kinds below add what their score rests on."""

    schema: Literal["recorder.eval.results/1"] = EVAL_SCHEMA
    run_id: str
    step: int
    samples_count: int | None
    metric: str
    score: float


@dataclass(frozen=True, slots=True, kw_only=True)
class PassAtKResults(EvalResults):
    """A checkpoint scored pass@k by the evaluator's own sampling (torch or vllm)."""

    k: int
    n_tasks: int
    tasks_passed: int
    target: float
    passed: bool
    complete_task_set: bool
    settings: SamplingSettings
    checkpoint: ScoredCheckpoint
    fingerprint: Mapping[str, Any]  # checked or not, and why; the values compared
    task_set: TaskSet
    task: Mapping[str, Any]  # the task spec's description (trainer.policy.taskspec.TaskSpec.describe)
    backend: Mapping[str, Any]  # name, dtype, device, precision, batch invariance, what the backend adds
    provenance: Mapping[str, Any]
    unverified: tuple[str, ...]  # verify's problems, when the run was evaluated with --force
    timings: Mapping[str, float]
    evaluator_segment: str
    samples: tuple[SampleRow, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandCheckpoint(Part):
    """The checkpoint the submitter's command scored, as committed, and the digest it was checked against."""

    path: str
    sha256: str
    bytes: int | None
    weight_update_ns: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResults(EvalResults):
    """A checkpoint scored by the submitter's command (`--backend command`)."""

    n_tasks: int
    target: float
    passed: bool
    backend: Mapping[str, Any]
    checkpoint: CommandCheckpoint
    fingerprint: Mapping[str, Any]
    provenance: Mapping[str, Any]  # with `command`: its command line, exit status, output hashes
    timings: Mapping[str, float]
    evaluator_segment: str
    records: tuple[Any, ...] | None  # as the command gave them
