"""Offline evaluation of a run's checkpoints under the MLPerf Training v6.1 rule (docs/design.md sections 1 and 4).

Checkpoints come from `checkpoint_committed` events; each is checked (path, sha256, fingerprint) before it
is scored; pass@k uses per-sample seeds so the score does not depend on batch size or worker count; every
outcome is an event written by the driver (writer "evaluator"), never by a worker.
"""
