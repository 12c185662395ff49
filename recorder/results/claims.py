"""A results.json read as claims to check, not as a document to trust (verify's evidence rule, audit).

A forger controls the file, so nothing in it can be assumed to have its type: each value is kept as the
file gives it, None where the file lacks the key, and `stated` says which keys it has (a null score is a
claim, a missing one is none). The names are those of `PassAtKResults` and its parts, so that a change to
the document is a change here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Self

# The one part a reader may stream instead of holding (recorder.verify.results_stream): PassAtKResults.samples.
SAMPLES: Final = "samples"
# The top-level keys read here, as named by PassAtKResults.
_TOP: Final = ("run_id", "step", "score", "k", "n_tasks", "tasks_passed", SAMPLES)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationClaims:
    """What a results.json states about its evaluation, each value whatever its type."""

    stated: frozenset[str]  # the top-level keys the file has
    run_id: object = None
    step: object = None
    score: object = None
    k: object = None
    n_tasks: object = None
    tasks_passed: object = None
    samples: object = None  # the rows, when the file was read whole
    checkpoint_sha256: object = None  # checkpoint.sha256
    task_spec_sha256: object = None  # task.spec_sha256
    backend_name: object = None  # backend.name, .dtype, .device
    backend_dtype: object = None
    backend_device: object = None

    @classmethod
    def of(cls, top: object) -> Self:
        """The claims of a parsed file (its top level; a file that is not an object claims nothing)."""
        if not isinstance(top, Mapping):
            return cls(stated=frozenset())
        checkpoint, task, backend = (_object(top.get(key)) for key in ("checkpoint", "task", "backend"))
        return cls(
            stated=frozenset(k for k in top if isinstance(k, str)),
            **{key: top.get(key) for key in _TOP},
            checkpoint_sha256=checkpoint.get("sha256"),
            task_spec_sha256=task.get("spec_sha256"),
            backend_name=backend.get("name"),
            backend_dtype=backend.get("dtype"),
            backend_device=backend.get("device"),
        )


def _object(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
