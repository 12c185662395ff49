"""What an evaluation of an imported FSDP2 archive reads besides its shards (the config.json and tokenizer
files of the run its final_meta.json names) is hashed into its commit: swapped after the import, verify
names it (rule commit-files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorder.adapters import dcp
from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter
from recorder.verify import verify_run
from tests.checkpoints.test_dcp_import import GBS, write_archives


def _imported(tmp_path: Path) -> tuple[Path, Path]:
    series = write_archives(tmp_path / "archives", tmp_path / "job")
    run = tmp_path / "runs" / "fsdp"
    dcp.import_checkpoints(series, run, fingerprint=checkpoint_fingerprinter(None), global_batch_size=GBS)
    assert verify_run(run).ok
    return run, tmp_path / "job"


@pytest.mark.parametrize("swapped", ["config.json", "tokenizer/tokenizer.json"])
def test_a_companion_file_swapped_after_import_is_altered(tmp_path: Path, swapped: str) -> None:
    run, job = _imported(tmp_path)
    path = job / swapped
    doc = json.loads(path.read_text())
    doc["swapped"] = True  # any change: a config with another width, a tokenizer with other merges
    path.write_text(json.dumps(doc))
    problems = verify_run(run).problems
    named = [p for p in problems if p.rule == "commit-files"]
    assert named and all(swapped in p.message for p in named), problems
