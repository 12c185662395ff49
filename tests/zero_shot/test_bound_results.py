"""A zero-shot results.json is bound to what it scored (recorder.results.binding): `recorder collect` shows a
result only when it verifies, and names on one line each the ones it skipped and why. The documents are
written by the command's own writer (`write_outputs`), for a checkpoint whose manifest is computed from real
files; lm-eval's scoring itself is covered by the slow tests of this folder."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from evaluator.harness.task_content import TEST_DATA
from evaluator.zero_shot.reporting.outputs import newest_results, write_outputs
from recorder.checkpoints.manifest import Manifest, ShardDigest
from recorder.results.zero_shot import HarnessVersion, LoadedCheckpoint, ZeroShotResults, ZeroShotSettings
from recorder.signing import SIGNING_KEY_ENV, generate
from tests.helpers import run_cli

PIQA = TEST_DATA[("piqa", "1.0")]  # the project's piqa test records: shown marked as test data


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("keys")
    generate(where / "alice")
    generate(where / "mallory")
    return where


def _document(checkpoint: Path, accuracy: float, finished: str) -> ZeroShotResults:
    shards = [
        ShardDigest(p.name, p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(checkpoint.glob("*.distcp"))
    ]
    return ZeroShotResults(
        label="tiny/run1/epoch_2",
        scores={"piqa": accuracy},
        checkpoint=LoadedCheckpoint(
            path=str(checkpoint),
            kind="archive",
            format="torch-dcp",
            step=None,
            run="tiny/run1",
            train_world_size=2,
            manifest=Manifest(tuple(shards)).to_dict(),
        ),
        settings=ZeroShotSettings(
            tasks=("piqa",),
            limit=None,
            num_fewshot=0,
            dtype="fp32",
            device="cpu",
            batch_size=32,
            workers="1",
            capacity=False,
        ),
        code={"root": "team", "files": {"model.py": "ab" * 32}, "git_commit": None, "git_dirty": True},
        holdout={"mode": "off"},
        harness=HarnessVersion(name="lm-eval", version="0.4.9"),
        tasks={"piqa": {"metric": "acc_norm", "n": 24, "of": 24, "version": "1.0", "content_sha256": PIQA}},
        timings={"load_s": 0.1},
        provenance={},
        finished=finished,
    )


@pytest.fixture
def results(tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two honest results of one checkpoint side by side, written signed with alice's key."""
    checkpoint = tmp_path / "fsdp2_epoch_2"
    checkpoint.mkdir()
    for rank in (0, 1):
        (checkpoint / f"__{rank}_0.distcp").write_bytes(bytes([rank]) * 64)
    out = tmp_path / "out"
    monkeypatch.setenv(SIGNING_KEY_ENV, str(keys / "alice"))
    for i, (accuracy, finished) in enumerate([(0.5, "2026-01-01T00:00:00+00:00"), (0.5, "2026-01-02T00:00:00+00:00")]):
        write_outputs(out / f"tiny_run1_epoch_2_{i}", _document(checkpoint, accuracy, finished), "", "")
    monkeypatch.delenv(SIGNING_KEY_ENV)
    return out


def _forge(results: Path, edit: dict[str, object]) -> Path:
    """A second results.json beside the honest ones: a copy with 0.99 scores and a later time."""
    forged = results / "tiny_run1_epoch_2_9"
    shutil.copytree(results / "tiny_run1_epoch_2_1", forged)
    doc = json.loads((forged / "results.json").read_text())
    doc.update(scores={"piqa": 0.99}, finished="2027-01-01T00:00:00+00:00", **edit)
    (forged / "results.json").write_text(json.dumps(doc, indent=1))
    return forged / "results.json"


def _rows(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("tiny/")]


def test_each_result_records_what_binds_it(results: Path, keys: Path) -> None:
    doc = json.loads((results / "tiny_run1_epoch_2_0" / "results.json").read_text())
    binding = doc["binding"]
    assert binding["checkpoint_manifest"] == doc["checkpoint"]["manifest"]["root"]
    assert len(binding["code"]) == 64 and len(binding["digest"]) == 64 and len(binding["signature"]) == 128
    assert list(doc)[-1] == "binding"


def test_two_honest_results_of_one_checkpoint_both_show_with_all(results: Path, keys: Path) -> None:
    done = run_cli("collect", str(results), "--trust", str(keys / "alice.pub"), "--all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(_rows(done.stdout)) == 2 and "skipped" not in done.stdout


def test_a_forged_later_result_with_higher_scores_is_skipped_and_named(results: Path, keys: Path) -> None:
    forged = _forge(results, {})
    done = run_cli("collect", str(results), "--all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r.split()[2] for r in _rows(done.stdout)] == ["0.5000", "0.5000"]
    assert f"skipped {forged}: its digest does not match its content: edited after it was written" in done.stdout
    assert all(d.scores == {"piqa": 0.5} for d in newest_results(results))  # nor shown as scored earlier


def test_a_forgery_with_its_digest_recomputed_is_skipped_under_trust(results: Path, keys: Path) -> None:
    """Whoever rewrites the file can recompute its digest and sign it with their own key, or with none: only
    a key the reader trusts says who wrote the scores."""
    from recorder.results.binding import bind
    from recorder.results.zero_shot import scored_code, scored_manifest, zero_shot_from_json
    from recorder.signing import load_signer

    forged = _forge(results, {})
    doc = zero_shot_from_json(forged.read_bytes())
    assert isinstance(doc, ZeroShotResults)
    for signer in (None, load_signer(keys / "mallory")):
        rebound = bind(dataclasses.replace(doc, binding=None), scored_manifest(doc), scored_code(doc), signer)
        forged.write_bytes(rebound.to_json())
        done = run_cli("collect", str(results), "--trust", str(keys / "alice.pub"), "--all")
        assert done.returncode == 0 and len(_rows(done.stdout)) == 2, done.stdout + done.stderr
        why = "unsigned" if signer is None else "not by a trusted key"
        [line] = [x for x in done.stdout.splitlines() if x.startswith("skipped ")]
        assert line.startswith(f"skipped {forged}: ") and why in line, done.stdout


def test_a_result_bound_to_another_checkpoint_is_skipped(results: Path) -> None:
    forged = _forge(results, {})
    doc = json.loads(forged.read_text())
    doc["checkpoint"]["manifest"]["shards"][0]["sha256"] = "0" * 64  # it claims to have scored other weights
    forged.write_text(json.dumps(doc, indent=1))
    done = run_cli("collect", str(results), "--all")
    assert f"skipped {forged}: " in done.stdout and len(_rows(done.stdout)) == 2, done.stdout


def test_nothing_verifies_exits_1_naming_each(results: Path) -> None:
    for path in results.glob("*/results.json"):
        doc = json.loads(path.read_text())
        del doc["binding"]
        path.write_text(json.dumps(doc, indent=1))
    done = run_cli("collect", str(results))
    assert done.returncode == 1 and "collect: no result verifies" in done.stdout
    assert done.stdout.count("not bound to what it scored") == 2, done.stdout


def test_a_forgery_with_its_digest_recomputed_is_marked_without_trust(results: Path, keys: Path) -> None:
    """Without a trusted key no author is checked: a forgery rebound with no key, or with a key of its own,
    is shown, but never as a plain row: every row's note says how far it is vouched for."""
    from recorder.results.binding import bind
    from recorder.results.zero_shot import scored_code, scored_manifest, zero_shot_from_json
    from recorder.signing import load_signer

    forged = _forge(results, {})
    doc = zero_shot_from_json(forged.read_bytes())
    assert isinstance(doc, ZeroShotResults)
    for signer, note in ((None, "unsigned"), (load_signer(keys / "mallory"), "key not checked")):
        rebound = bind(dataclasses.replace(doc, binding=None), scored_manifest(doc), scored_code(doc), signer)
        forged.write_bytes(rebound.to_json())
        done = run_cli("collect", str(results), "--all")
        assert done.returncode == 0 and "skipped" not in done.stdout, done.stdout + done.stderr
        rows = _rows(done.stdout)
        [row] = [r for r in rows if "0.9900" in r]
        assert row.endswith(note), done.stdout
        assert all(r.endswith(("unsigned", "key not checked")) for r in rows), done.stdout  # alice's too
        assert f"{note}: " in done.stdout and "no --trust key was given" in done.stdout, done.stdout
    trusted = run_cli("collect", str(results), "--trust", str(keys / "alice.pub"), "--all")
    assert not any(r.endswith(("unsigned", "key not checked")) for r in _rows(trusted.stdout)), trusted.stdout


@pytest.mark.parametrize("change", ["same-size", "resized", "removed"])
def test_a_result_whose_checkpoint_changed_after_scoring_is_not_shown(results: Path, keys: Path, change: str) -> None:
    shard = results.parent / "fsdp2_epoch_2" / "__0_0.distcp"
    if change == "same-size":
        shard.write_bytes(b"\x07" + shard.read_bytes()[1:])  # one byte, its size kept
    elif change == "resized":
        shard.write_bytes(shard.read_bytes() * 2)
    else:
        shard.unlink()
    done = run_cli("collect", str(results), "--trust", str(keys / "alice.pub"), "--all")
    assert done.returncode == 1 and _rows(done.stdout) == [], done.stdout + done.stderr
    skipped = [x for x in done.stdout.splitlines() if x.startswith("skipped ")]
    assert len(skipped) == 2 and all("checkpoint changed since scored: __0_0.distcp" in x for x in skipped), skipped


def test_a_result_whose_checkpoint_is_gone_is_shown_and_named(results: Path, keys: Path) -> None:
    shutil.rmtree(results.parent / "fsdp2_epoch_2")
    done = run_cli("collect", str(results), "--trust", str(keys / "alice.pub"))
    assert done.returncode == 0 and len(_rows(done.stdout)) == 1, done.stdout + done.stderr
    assert "note: tiny/run1/epoch_2: its checkpoint is gone, its shards not rechecked" in done.stdout


def test_a_result_scored_beside_code_outside_the_install_is_marked(tmp_path: Path, keys: Path) -> None:
    checkpoint = tmp_path / "fsdp2_epoch_2"
    checkpoint.mkdir()
    (checkpoint / "__0_0.distcp").write_bytes(b"\0" * 64)
    planted = {"unrecorded": ["/site-packages/planted_scores.py"], "changed": [], "sha256": "ab" * 32}
    doc = dataclasses.replace(
        _document(checkpoint, 0.5, "2026-01-01T00:00:00+00:00"), provenance={"environment": planted}
    )
    write_outputs(tmp_path / "out" / "one", doc, "", "")
    done = run_cli("collect", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = _rows(done.stdout)
    assert "1 module file(s) outside the install" in " ".join(done.stdout.split()), done.stdout
