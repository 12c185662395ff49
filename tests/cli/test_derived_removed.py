"""`rm -rf RUN/derived`: what is computed from the events comes back with `recorder replay`, and the evidence
that is not (derived/evals/, the results files the events hash) is reported MISSING by verify, exit 1,
never ALTERED: nothing was changed, something was removed. Replay then derives only when forced."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.cli.shell import run_main
from tests.kit.synthetic import record_run


def test_removed_derived_files_are_missing_evidence_not_an_alteration(tmp_path: Path) -> None:
    run = record_run(tmp_path, "r", gbs=256, steps=20, evals=[(19, 0.72)], closed=True).path
    assert run_main("verify", str(run)).code == 0
    shutil.rmtree(run / "derived")

    done = run_main("verify", str(run))
    assert done.code == 1
    assert "ALTERED" not in done.out + done.err
    assert [line.split(" ", 1)[0] for line in done.out.splitlines() if "[rule" in line] == ["MISSING:"] * 2
    assert done.out.splitlines()[-1].startswith("verify: MISSING (")
    doc = json.loads(run_main("verify", str(run), "--format", "json").out)
    assert {p["verdict"] for p in doc["problems"]} == {"MISSING"}

    refused = run_main("replay", str(run))  # a score whose evidence is gone is not proven
    assert refused.code == 1 and "MISSING" not in refused.err and "is missing" in refused.err
    replayed = run_main("replay", str(run), "--force")  # the computable part comes back from the events
    assert replayed.code == 0, replayed.err
    assert [p.name for p in (run / "derived").glob("result_official*.txt")] == ["result_official.UNVERIFIED.txt"]
