"""mlperf-logging's RCP checker on one run's derived mllog, run once per input.

The checker reads the whole log, three times for one run of qwen35_397b_grpo (it checks a single run as
three identical copies): on a million-event run's 90 MB mllog that is minutes. Its verdict depends only on
the log's bytes, the ruleset and the checker's version, so it is kept in `derived/rcp.json` under exactly
those: the SHA-256 of the log, the ruleset and the mlperf-logging version. The SHA-256 of a file seen
before with the same name, size and modification time is not recomputed (what `git status` trusts too);
`recorder replay` rewrites the mllog when the events change, which changes its time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recorder.store.run import RunDir, derived_dir, write_derived
from recorder.verify.facts.fact_checks import sha256_file
from replay.checkers.check import CheckResult, mlperf_logging_version, rcp

CACHE_FILE = "rcp.json"
KEEP = 8  # verdicts kept per run: official, as-recorded, an UNVERIFIED log, other rulesets


def _entries(run: RunDir) -> list[dict[str, Any]]:
    """The kept verdicts; a cache file that does not parse is ignored and rewritten (it holds nothing
    that cannot be computed again)."""
    path = run.derived / CACHE_FILE
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    entries = kept.get("verdicts") if isinstance(kept, dict) else None
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _result(entry: dict[str, Any]) -> CheckResult:
    return CheckResult(
        "RCP checker",
        str(entry["ruleset"]),
        bool(entry["ok"]),
        tuple(str(r) for r in entry["reasons"]),
        str(entry["mlperf_logging"]),
        None if entry.get("error") is None else str(entry["error"]),
    )


def _input_sha256(entries: list[dict[str, Any]], mllog: Path) -> str:
    stat = mllog.stat()
    for e in entries:
        if (e.get("file"), e.get("size"), e.get("mtime_ns")) == (mllog.name, stat.st_size, stat.st_mtime_ns):
            return str(e["sha256"])
    return sha256_file(mllog)


def cached_rcp(run: RunDir, mllog: Path, ruleset: str) -> tuple[CheckResult, bool]:
    """The RCP checker's verdict on `mllog` (a file under the run's derived/), and whether it came from
    the cache. The checker runs only for an input it has not judged under this ruleset and version."""
    entries = _entries(run)
    version = mlperf_logging_version()
    sha = _input_sha256(entries, mllog)
    for e in entries:
        if (e.get("sha256"), e.get("ruleset"), e.get("mlperf_logging")) == (sha, ruleset, version):
            try:
                return _result(e), True
            except (KeyError, TypeError):  # an entry written by hand or cut short: judge again
                break
    result = rcp([mllog.read_text(encoding="utf-8")], ruleset)
    stat = mllog.stat()
    entry = {
        "sha256": sha,
        "ruleset": ruleset,
        "mlperf_logging": version,
        "file": mllog.name,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "ok": result.ok,
        "reasons": list(result.reasons),
        "error": result.error,
    }
    others = [
        e for e in entries if (e.get("sha256"), e.get("ruleset"), e.get("mlperf_logging")) != (sha, ruleset, version)
    ]
    body = json.dumps({"verdicts": [entry, *others][:KEEP]}, indent=1) + "\n"
    write_derived(derived_dir(run) / CACHE_FILE, body.encode("utf-8"))
    return result, False
