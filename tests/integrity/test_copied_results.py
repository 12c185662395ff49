"""A result is bound to the checkpoint it sits with, not to the path it names: a checkpoint copied with its
eval_results is rechecked against the copy's own bytes, so the copy whose shard was altered is refused by
`collect --all --trust`, while the untouched original still shows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.zero_shot.reporting.outputs import write_outputs
from recorder.signing import SIGNING_KEY_ENV
from tests.helpers import run_cli
from tests.zero_shot.test_bound_results import _document, _rows, keys

__all__ = ["keys"]  # the fixture: alice's and mallory's key pairs


def test_a_result_copied_with_its_checkpoint_is_rechecked_against_the_copy(
    tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = tmp_path / "a" / "fsdp2_epoch_2"
    original.mkdir(parents=True)
    for rank in (0, 1):
        (original / f"__{rank}_0.distcp").write_bytes(bytes([rank]) * 64)
    monkeypatch.setenv(SIGNING_KEY_ENV, str(keys / "alice"))
    write_outputs(
        original / "eval_results" / "official_lmeval7_1", _document(original, 0.5, "2026-01-01T00:00:00+00:00"), "", ""
    )
    monkeypatch.delenv(SIGNING_KEY_ENV)
    copy = tmp_path / "b" / "fsdp2_epoch_2"
    shutil.copytree(original, copy)
    (copy / "__1_0.distcp").write_bytes(bytes([7]) * 64)  # same size, other bytes
    trust = ("--trust", str(keys / "alice.pub"), "--all")
    done = run_cli("collect", str(copy / "eval_results"), *trust)
    said = " ".join(done.stdout.split())
    assert "Traceback" not in done.stderr and _rows(done.stdout) == [], done.stdout + done.stderr
    assert f"skipped {copy}/eval_results/official_lmeval7_1/results.json: checkpoint changed since scored" in said
    assert "__1_0.distcp has sha256" in said, said
    shown = run_cli("collect", str(original / "eval_results"), *trust)
    assert [r.split()[2] for r in _rows(shown.stdout)] == ["0.5000"], shown.stdout + shown.stderr
