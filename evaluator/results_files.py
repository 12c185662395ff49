"""results.json: the evidence behind one score, under `derived/evals/step_NNNNNNN/`.

Its documents are typed in the core (recorder.results); here, what the evaluator computes for them (a
sample's rows, the task set's hash) and the atomic write of one under the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from recorder.checkpoints.torch_dcp.fsdp2_layout import step_dir
from recorder.results.document import Document
from recorder.results.evaluation import SampleRow
from recorder.store import canonical
from recorder.store.run import RunDir, derived_dir, write_derived


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """One generated completion and its outcome. Built by workers, returned to the driver."""

    task: int
    sample: int
    seed: int
    completion: str
    reward: float

    @property
    def correct(self) -> bool:
        return self.reward >= 1.0


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def task_set_sha256(pairs: Sequence[tuple[str, str]]) -> str:
    """Hash of the ordered (prompt, answer) list: two evaluations compare only if this is equal."""
    return sha256_text(canonical.dumps([list(p) for p in pairs]))


def results_dir(run: RunDir, step: int, *more: str) -> Path:
    """`derived/evals/step_NNNNNNN/<more...>`, created inside the run (never through a symlink)."""
    return derived_dir(run, "evals", step_dir(step), *more)


def sample_rows(samples: Sequence[Sample], pairs: Sequence[tuple[str, str]]) -> tuple[SampleRow, ...]:
    """Per-sample hashes of prompt, completion and target, with seed, reward and outcome."""
    return tuple(
        SampleRow(
            task=s.task,
            sample=s.sample,
            seed=s.seed,
            prompt_sha256=sha256_text(pairs[s.task][0]),
            completion_sha256=sha256_text(s.completion),
            target_sha256=sha256_text(pairs[s.task][1]),
            reward=s.reward,
            correct=s.correct,
        )
        for s in samples
    )


def write_results(path: Path, doc: Document) -> str:
    """Write `doc` atomically (temporary file, fsync, rename); returns the file's sha256."""
    body = doc.to_json()
    write_derived(path, body)
    return hashlib.sha256(body).hexdigest()
