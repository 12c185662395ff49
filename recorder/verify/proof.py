"""What a verdict rests on, in a few words every command that shows one prints beside it.

`verify`: the log is intact and its facts possible (always, or the verdict is not shown unmarked).
`signatures`: the run was judged under a key (its own, or keys given to trust) and every segment passed.
`audit`: derived/audit.json (`recorder audit`) reproduced the deciding step of this run. Without it the
words end in "not audited": a consistent forged evaluation is caught by audit alone, so nothing may look
audited that was not. audit.json is a file under derived/ like any other: it says what audit found when it
ran, and is read here with a size limit, only when regular.
"""

from __future__ import annotations

import json

from recorder.store.reader import recorded_run_id
from recorder.store.run import RunDir
from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded
from recorder.verify.segments import VerifyReport

AUDIT_FILE = "audit.json"
AUDIT_LIMIT = 16 * 1024 * 1024


def signatures_proven(report: VerifyReport) -> bool:
    """Judged under a key, with every segment signed by an accepted one (no trust problem, none waived)."""
    trust_failed = any(p.rule in ("signed-run", "signed-set", "signature") for p in report.problems)
    return report.trust_judged and not report.untrusted and not trust_failed and bool(report.segments)


def audited(run: RunDir, step: int | None) -> bool:
    """Whether derived/audit.json of this run reproduced `step` (and was not audited past a failed verify)."""
    if step is None:
        return False
    try:
        doc = json.loads(read_bounded(run.derived / AUDIT_FILE, AUDIT_LIMIT, "audit report"))
    except (IrregularFileError, ValueError, RecursionError):
        return False
    if not isinstance(doc, dict) or doc.get("run_id") != recorded_run_id(run) or doc.get("unverified"):
        return False
    steps = doc.get("steps")
    return isinstance(steps, list) and any(
        isinstance(s, dict) and s.get("step") == step and s.get("status") == "reproduced" for s in steps
    )


def proven_by(report: VerifyReport, step: int | None) -> str:
    """e.g. "proven by verify+signatures, not audited"; "proven by verify+audit"."""
    return proof_words(signatures_proven(report), audited(report.run, step))


def proof_words(signatures: bool, audit: bool) -> str:
    parts = ["verify", *(["signatures"] if signatures else []), *(["audit"] if audit else [])]
    return "proven by " + "+".join(parts) + ("" if audit else ", not audited")
