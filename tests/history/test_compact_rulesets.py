"""`compact` and `runs` over a root holding runs of any ruleset, plus one damaged run: they name the damaged
run and go on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from recorder.adapters.mllog_import import import_file
from tests.helpers import run_in_process
from tests.replay.corpus_index import corpus_logs

SMALL = (
    ("mlperf-results/training_results_v4.1/ASUSTeK/results/ESC_N8_E11/bert/result_1.txt", "4.1.0"),
    ("mlperf-results/training_results_v5.1/Lenovo/results/SR680aV3-8xB200_SXM_180GB/retinanet/result_01.txt", "5.1.0"),
    ("mlperf-results/training/llm_moe_pretraining/nemo/rcp_logs/15360/seed_1.out", "6.0.0"),  # checker raises
    ("qwen35_397b_grpo_rcp/GBS512/seed_3.out", "6.1.0"),
)


def _damage(root: Path, name: str) -> Path:
    """A copy of an imported run with bytes overwritten in the middle of its segment."""
    source = next(p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith("."))
    damaged = root / name
    shutil.copytree(source, damaged)
    segment = next((damaged / "events").glob("*.arrows"))
    raw = bytearray(segment.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 8] = b"XXXXXXXX"
    segment.write_bytes(bytes(raw))
    return damaged


def _compact_and_list(root: Path, imported: int) -> None:
    _damage(root, "damaged")
    compacted = run_in_process("compact", "--root", str(root))
    assert compacted.returncode == 1, compacted.stdout + compacted.stderr
    assert f"{root / 'damaged'}" in compacted.stderr and "not compacted" in compacted.stderr
    assert "Traceback" not in compacted.stdout + compacted.stderr
    assert compacted.stdout.count(": compacted, ") == imported
    assert "scores not written" not in compacted.stderr
    for run in root.iterdir():
        if run.is_dir() and run.name not in ("damaged", ".history"):
            assert (run / "derived" / "events.parquet").is_file(), run
            rows = [json.loads(ln) for ln in (run / "derived" / "scores.jsonl").read_text().splitlines()]
            assert rows and all(r["ruleset"] != "unknown" for r in rows)
    listed = run_in_process("runs", "--root", str(root))
    assert listed.returncode == 0, listed.stderr
    assert f"{imported} runs under {root}" in listed.stdout
    assert f"{root / 'damaged'}" in listed.stderr and "left out of the history" in listed.stderr


def test_compact_and_runs_over_rulesets_name_the_damaged_run(corpus: Path, tmp_path: Path) -> None:
    for rel, ruleset in SMALL:
        import_file(corpus / rel, tmp_path, ruleset=ruleset)
    _compact_and_list(tmp_path, len(SMALL))


@pytest.mark.slow
def test_compact_over_the_whole_corpus_plus_a_damaged_run(corpus: Path, tmp_path: Path) -> None:
    logs = corpus_logs(corpus)
    for path, ruleset in logs:
        import_file(path, tmp_path, ruleset=ruleset)
    _compact_and_list(tmp_path, len(logs))
