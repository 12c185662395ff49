"""Verification of a run: the bytes of every segment (`segments`), then the facts they record (`facts`,
with the trainer sessions' rules in `sessions`, the evaluation evidence in `evidence` and the recorded
evaluation settings in `eval_settings`). Every failure is a `Problem` naming its rule, segment and seq."""

from recorder.verify.problem import Problem
from recorder.verify.segments import (
    SEGMENT_NAME_RULE,
    SIGNATURE_RULE,
    SegmentSummary,
    VerifyReport,
    check_segment,
    verify_run,
)

__all__ = [
    "SEGMENT_NAME_RULE",
    "SIGNATURE_RULE",
    "Problem",
    "SegmentSummary",
    "VerifyReport",
    "check_segment",
    "verify_run",
]
