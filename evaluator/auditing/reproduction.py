"""Whether a recorded evaluation is reproduced: its evidence (results.json) against a re-evaluation's samples.

The evaluator is batch- and worker-invariant (per-sample seeds), so an honest evaluation of the same weights
with the same settings gives the same completions bit for bit. Comparing every sample's hashes and the
accuracy therefore separates a reproduced evaluation from a forged or pasted one, and names the first
sample where they part.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluator.attempts import Attempt
from evaluator.errors import MissingEvidenceError
from recorder.results.claims import EvaluationClaims
from recorder.results.evaluation import SampleRow
from recorder.store.kinds import EvalResult
from recorder.store.run import RunDir
from recorder.verify.facts.fact_checks import RESULTS_LIMIT, inside, sha256_file

Status = Literal["reproduced", "differs", "missing evidence"]

# Every field of a results.json's SampleRow, in the order a difference is reported.
SAMPLE_FIELDS = (
    "task",
    "sample",
    "seed",
    "prompt_sha256",
    "target_sha256",
    "completion_sha256",
    "reward",
    "correct",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedEvaluation:
    """One scored evaluation as the run recorded it: the eval_result's accuracy and what its results.json
    claims (checked here, never trusted)."""

    step: int
    accuracy: float | None  # the eval_result event's value: the score the run claims
    results: str  # results.json, relative to the run
    results_sha256: str
    claims: EvaluationClaims

    @property
    def samples(self) -> list[Any]:
        rows = self.claims.samples
        return rows if isinstance(rows, list) else []

    @property
    def spec_sha256(self) -> str | None:
        return _text(self.claims.task_spec_sha256)

    @property
    def dtype(self) -> str | None:
        return _text(self.claims.backend_dtype)

    @property
    def device(self) -> str | None:
        return _text(self.claims.backend_device)

    @property
    def backend(self) -> str | None:
        return _text(self.claims.backend_name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """The first place a re-evaluation parts from the record: `what` (a sample or the accuracy), both values."""

    what: str  # "task 3 sample 1: completion_sha256", "samples", "accuracy", "results.json score", "task spec"
    recorded: Any
    recomputed: Any

    def __str__(self) -> str:
        return f"{self.what}: {_short(self.recorded)} recorded, {_short(self.recomputed)} recomputed"


def recorded_evaluation(run: RunDir, attempt: Attempt) -> RecordedEvaluation:
    """The evidence behind a scored attempt; MissingEvidenceError when results.json is absent, outside the run,
    not the recorded file (sha256), not JSON, or without per-sample hashes."""
    assert attempt.result is not None and attempt.step is not None  # a scored attempt
    result = EvalResult.from_event(attempt.result)
    where = f"step {attempt.step} ({attempt.segment} seq {attempt.result.seq})"
    path = inside(run, result.results)
    if path is None or not path.is_file():
        raise MissingEvidenceError(f"{where}: its results.json ({result.results!r}) is absent")
    if path.stat().st_size > RESULTS_LIMIT or (found := sha256_file(path)) != result.results_sha256:
        raise MissingEvidenceError(
            f"{where}: {result.results} is not the recorded file (sha256 {str(result.results_sha256)[:16]}... recorded)"
        )
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python parses
        raise MissingEvidenceError(f"{where}: {result.results} is not JSON") from None
    claims = EvaluationClaims.of(doc)
    if not isinstance(claims.samples, list):
        raise MissingEvidenceError(
            f"{where}: {result.results} has no per-sample completion hashes (an evaluation by --backend command "
            "records only its score): nothing to reproduce bit for bit"
        )
    assert result.results is not None  # inside() accepted it
    return RecordedEvaluation(
        step=attempt.step, accuracy=attempt.accuracy, results=result.results, results_sha256=found, claims=claims
    )


def first_difference(recorded: RecordedEvaluation, samples: Sequence[SampleRow], accuracy: float) -> Difference | None:
    """Where the re-evaluation (`samples` as results.json rows, `accuracy`) first parts from the record, or
    None when every sample's hashes and outcome, and the accuracy, are the same bits."""
    for i, (old, new) in enumerate(zip(recorded.samples, samples, strict=False)):
        old = old if isinstance(old, dict) else {}
        for name in SAMPLE_FIELDS:
            mine = getattr(new, name)
            if old.get(name) != mine or type(old.get(name)) is not type(mine):
                return Difference(
                    what=f"sample {i} (task {new.task} sample {new.sample}): {name}",
                    recorded=old.get(name),
                    recomputed=mine,
                )
    if len(recorded.samples) != len(samples):
        return Difference(what="samples", recorded=len(recorded.samples), recomputed=len(samples))
    if recorded.accuracy is None or recorded.accuracy != accuracy:
        return Difference(what="accuracy", recorded=recorded.accuracy, recomputed=accuracy)
    score = recorded.claims.score
    if not isinstance(score, float) or score != accuracy:
        return Difference(what="results.json score", recorded=score, recomputed=accuracy)
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _short(value: Any) -> str:
    """A hash cut to 16 characters for a line; numbers in full (bit for bit means every digit)."""
    if isinstance(value, str) and len(value) == 64:
        return value[:16] + "..."
    return repr(value)
