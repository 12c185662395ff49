"""The RCP checker runs once per input: its verdict is kept in derived/rcp.json by the log's SHA-256, the
ruleset and the mlperf-logging version (replay.checkers.rcp_cache), and equals what the checker says afresh."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from recorder.store.run import RunDir
from replay.checkers.check import rcp
from replay.checkers.rcp_cache import CACHE_FILE, cached_rcp

LOG = "qwen35_397b_grpo_rcp/GBS512/seed_1.out"


def test_the_rcp_verdict_is_computed_once_per_input(corpus: Path, tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "seed1")
    run.derived.mkdir(exist_ok=True)
    mllog = run.derived / "result_as-recorded.txt"
    shutil.copyfile(corpus / LOG, mllog)
    fresh = rcp([mllog.read_text(encoding="utf-8")], "6.1.0")

    first, cached = cached_rcp(run, mllog, "6.1.0")
    assert not cached and first == fresh and first.ok
    again, cached = cached_rcp(run, mllog, "6.1.0")
    assert cached and again == fresh

    os.utime(mllog, ns=(1, 1))  # rewritten with the same bytes: the SHA-256 says it is the same input
    assert cached_rcp(run, mllog, "6.1.0") == (fresh, True)

    with open(mllog, "a", encoding="utf-8") as f:  # other bytes: judged again
        f.write("\n")
    assert cached_rcp(run, mllog, "6.1.0")[1] is False
    assert cached_rcp(run, mllog, "6.1.0")[1] is True
    kept = json.loads((run.derived / CACHE_FILE).read_text())["verdicts"]
    assert len(kept) == 2 and {k["mlperf_logging"] for k in kept} == {fresh.mlperf_logging}


def test_a_damaged_cache_is_judged_again(corpus: Path, tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "seed1")
    run.derived.mkdir(exist_ok=True)
    mllog = run.derived / "result_as-recorded.txt"
    shutil.copyfile(corpus / LOG, mllog)
    (run.derived / CACHE_FILE).write_text('{"verdicts": [{"sha256": ')
    result, cached = cached_rcp(run, mllog, "6.1.0")
    assert not cached and result.ok
    assert cached_rcp(run, mllog, "6.1.0") == (result, True)
