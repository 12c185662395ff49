"""`recorder rm`: a run is deleted whole, links are never followed, and a run someone vouches for (signed,
adopted on resume, or still open) is kept unless forced. Nothing changes in the other runs, and the root's
history stops showing the removed run at once, packs included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recorder import signing
from recorder.history.compact import pack_root, read_packs
from recorder.history.views import open_history
from recorder.signing import load_signer
from recorder.store.run import RunDir
from recorder.store.signed_segments import Entry, record_signed_segment
from tests.helpers import run_cli, run_in_process
from tests.kit.synthetic import record_run


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _run_ids(root: Path) -> list[str]:
    with open_history(root) as history:
        return sorted(r.run_id for r in history.runs)


def test_a_closed_run_is_removed_and_the_others_are_untouched(fresh_root: Path) -> None:
    others = {name: _tree(fresh_root / name) for name in ("live", "rcp-gbs256-seed1", "damaged")}
    done = run_in_process("rm", str(fresh_root / "worked"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"removed {fresh_root / 'worked'} (run worked: "), done.stdout
    assert not (fresh_root / "worked").exists()
    assert [p.name for p in fresh_root.iterdir() if p.name.startswith(".removing-")] == []
    assert {name: _tree(fresh_root / name) for name in others} == others
    assert "worked" not in _run_ids(fresh_root)


def test_a_packed_run_leaves_the_history_at_once_and_compact_drops_its_rows(fresh_root: Path) -> None:
    assert run_in_process("compact", "--root", str(fresh_root), "--no-scores").returncode == 1  # damaged
    assert any("worked" in p.runs for p in read_packs(fresh_root))
    done = run_in_process("rm", str(fresh_root / "worked"))
    assert done.returncode == 0, done.stderr
    assert "its rows in the root's packs are no longer read" in done.stdout
    assert "worked" not in _run_ids(fresh_root)
    with open_history(fresh_root) as history:
        assert history.query("SELECT count(*) AS n FROM events WHERE run_id = 'worked'").to_pylist() == [{"n": 0}]
    pack_root(fresh_root)
    assert not any("worked" in p.runs for p in read_packs(fresh_root))


def test_a_run_with_an_open_segment_is_kept_unless_forced(fresh_root: Path) -> None:
    before = _tree(fresh_root / "live")
    done = run_in_process("rm", str(fresh_root / "live"))
    assert done.returncode == 1
    assert done.stderr.count("error:") == 1 and "evaluator-0001.arrows is open" in done.stderr, done.stderr
    assert f"recorder rm --force {fresh_root / 'live'}" in done.stderr
    assert _tree(fresh_root / "live") == before
    assert run_in_process("rm", "--force", str(fresh_root / "live")).returncode == 0
    assert not (fresh_root / "live").exists()


def test_a_signed_run_is_kept_unless_forced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_cli("keygen", "-o", str(tmp_path / "alice")).returncode == 0
    monkeypatch.setenv(signing.SIGNING_KEY_ENV, str(tmp_path / "alice"))
    run = record_run(tmp_path / "root", "signed", gbs=256, steps=4, closed=True).path
    monkeypatch.delenv(signing.SIGNING_KEY_ENV)
    done = run_in_process("rm", str(run))
    assert done.returncode == 1 and "kept, because it is signed (key " in done.stderr, done.stderr
    assert run.is_dir()
    assert run_in_process("rm", "--force", str(run)).returncode == 0
    assert not run.exists()


def test_a_run_with_adopted_segments_is_kept_unless_forced(tmp_path: Path) -> None:
    assert run_cli("keygen", "-o", str(tmp_path / "alice")).returncode == 0
    run = record_run(tmp_path / "root", "resumed", gbs=256, steps=4, closed=True)
    segment = sorted(run.events.iterdir())[0]
    signer = load_signer(tmp_path / "alice")
    record_signed_segment(run, "resumed", signer, segment.name, Entry(3, "", segment.stat().st_size))
    done = run_in_process("rm", str(run.path))
    assert done.returncode == 1, done.stdout
    assert f"its segments {segment.name} were adopted on resume" in done.stderr
    assert run.path.is_dir()


def test_links_inside_a_run_are_removed_never_followed(tmp_path: Path) -> None:
    run = record_run(tmp_path / "root", "linked", gbs=256, steps=4, closed=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the user's file\n")
    (run.path / "checkpoints").mkdir(exist_ok=True)
    (run.path / "checkpoints" / "elsewhere").symlink_to(outside, target_is_directory=True)
    (run.path / "note.txt").symlink_to(outside / "keep.txt")
    done = run_in_process("rm", str(run.path))
    assert done.returncode == 0, done.stderr
    assert not run.path.exists()
    assert (outside / "keep.txt").read_text() == "the user's file\n"


def test_a_link_to_a_run_is_refused_and_kept(tmp_path: Path) -> None:
    run = record_run(tmp_path / "root", "real", gbs=256, steps=4, closed=True)
    link = tmp_path / "root" / "alias"
    link.symlink_to(run.path, target_is_directory=True)
    done = run_in_process("rm", str(link))
    assert done.returncode == 2 and "is a link to" in done.stderr, done.stderr
    assert link.is_symlink() and run.path.is_dir()


def test_several_runs_one_refused_the_others_removed(fresh_root: Path) -> None:
    done = run_in_process("rm", str(fresh_root / "worked"), str(fresh_root / "live"), str(fresh_root / "nope"))
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("error:") == 2, done.stderr
    assert "no such run directory" in done.stderr
    assert not (fresh_root / "worked").exists() and (fresh_root / "live").is_dir()


def test_no_run_and_a_read_only_root_touch_nothing(tmp_path: Path) -> None:
    assert run_in_process("rm", str(tmp_path)).returncode == 2  # no events/ inside: not a run
    run = record_run(tmp_path / "root", "kept", gbs=256, steps=4, closed=True)
    before = _tree(run.path)
    os.chmod(tmp_path / "root", 0o555)
    try:
        if os.access(tmp_path / "root", os.W_OK):
            pytest.skip("this user writes into a read-only folder (root)")
        done = run_in_process("rm", str(run.path))
    finally:
        os.chmod(tmp_path / "root", 0o755)
    assert done.returncode == 1 and "nothing of it was removed" in done.stderr, done.stderr
    assert _tree(run.path) == before and RunDir.open(run.path)
