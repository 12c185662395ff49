"""Trust is a property of the run: a signed run is judged by its own key in every command that gives a
verdict, with no flag. Four attacks on a signed run (an unsigned segment appended, a segment signed by
another key, a signed segment deleted, a signed segment's tail cut) each make replay --check, eval, score,
report and runs fail or flag the run; `--untrusted-ok` judges it anyway and marks every score line."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from recorder import signing
from recorder.store.kinds import EvalStop
from recorder.store.log import LogWriter
from recorder.store.reader import read_segment
from recorder.verify import verify_run
from recorder.verify.trust import SIGNED_RUN_RULE, SIGNED_SET_RULE, TRUST_ENV
from tests.cli.shell import run_main
from tests.helpers import run_cli
from tests.integrity.forge import evaluator_segment, rows, write
from tests.kit.synthetic import record_run


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("keys")
    for name in ("alice", "bob"):
        assert run_cli("keygen", "-o", str(where / name)).returncode == 0
    return where


@pytest.fixture
def signed_run(keys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A closed, evaluated run recorded with alice's key, replayed once (so it has derived/scores.jsonl)."""
    monkeypatch.setenv(signing.SIGNING_KEY_ENV, str(keys / "alice"))
    run = record_run(tmp_path / "runs", "signed", gbs=256, steps=20, evals=[(19, 0.72), (18, 0.70)], closed=True).path
    monkeypatch.delenv(signing.SIGNING_KEY_ENV)  # the attacker has no key: nothing below signs as alice
    assert run_cli("replay", str(run)).returncode == 0
    return run


def _unsigned_copy(
    segment: Path, name: str, keep: Callable[[list[dict[str, object]]], list[dict[str, object]]]
) -> None:
    events = [e for e in rows(segment) if e["kind"] not in ("segment_opened", "chain_signed")]
    events[-1]["data"] = {"events": 0}
    write(segment.with_name(name), keep(events))


def append_unsigned(run: Path, keys: Path) -> str:
    """A second evaluator segment, unsigned, with an earlier passing result."""
    _unsigned_copy(evaluator_segment(run), "evaluator-0002.arrows", lambda events: events)
    return SIGNED_RUN_RULE


def signed_by_another_key(run: Path, keys: Path) -> str:
    """A segment honestly signed, by bob: its signature verifies, but bob is not the run's key."""
    with LogWriter(run, "evaluator", signer=signing.load_signer(keys / "bob")) as w:
        w.append(EvalStop(), step=18)
    return SIGNED_RUN_RULE


def delete_signed(run: Path, keys: Path) -> str:
    evaluator_segment(run).unlink()
    return SIGNED_SET_RULE


def cut_signed_tail(run: Path, keys: Path) -> str:
    """The evaluator segment cut before its closing record: what is left reads as a writer that died, with
    fewer events than the signed list says it closed with."""
    segment = evaluator_segment(run)
    offsets = read_segment(segment).offsets
    os.truncate(segment, offsets[-2])
    return SIGNED_SET_RULE


ATTACKS = [append_unsigned, signed_by_another_key, delete_signed, cut_signed_tail]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.__name__)
def test_every_verdict_refuses_an_attacked_signed_run_with_no_flag(
    signed_run: Path, keys: Path, attack: Callable[[Path, Path], str]
) -> None:
    rule = attack(signed_run, keys)
    assert rule in {p.rule for p in verify_run(signed_run).problems}
    # the commands in this process through the CLI's entry point: their exit codes and words are what is read
    for args in (
        ["verify", str(signed_run)],
        ["verify", str(signed_run), "--trust", str(keys / "alice.pub"), "--require-signed"],
        ["replay", str(signed_run), "--check"],
        ["eval", str(signed_run)],
        ["score", str(signed_run)],
    ):
        done = run_main(*args)
        assert done.code == 1, (args, done.out, done.err)
        assert f"rule {rule}" in done.out + done.err, (args, done.out, done.err)
        assert "Traceback" not in done.err
    report = run_main("report", str(signed_run), "-o", str(signed_run.parent / "page.html"))
    assert "UNVERIFIED" in report.out and f"rule {rule}" in report.out, report.out + report.err
    runs = run_main("runs", "--root", str(signed_run.parent))
    assert "untrusted" in runs.out and "UNTRUSTED:" in runs.out, runs.out + runs.err


def test_untrusted_ok_judges_anyway_and_says_so_on_every_score_line(signed_run: Path, keys: Path) -> None:
    _unsigned_copy(evaluator_segment(signed_run), "evaluator-0001.arrows", lambda events: events)  # key stripped
    assert run_cli("replay", str(signed_run)).returncode == 1
    done = run_cli("replay", str(signed_run), "--untrusted-ok")
    scored = [line for line in done.stdout.splitlines() if "minutes" in line]
    assert scored and all(line.startswith("UNTRUSTED") for line in scored), done.stdout + done.stderr
    score = run_cli("score", str(signed_run), "--untrusted-ok", "--format", "json")
    assert "UNTRUSTED" in score.stdout, score.stdout + score.stderr
    rows_written = (signed_run / "derived" / "scores.jsonl").read_text().splitlines()
    assert rows_written and all("UNTRUSTED" in line for line in rows_written)


def test_the_honest_signed_run_is_proven_by_signatures_and_says_it_was_not_audited(signed_run: Path) -> None:
    assert verify_run(signed_run).ok
    done = run_cli("replay", str(signed_run))
    assert done.returncode == 0 and "proven by verify+signatures, not audited" in done.stdout, done.stdout
    runs = run_cli("runs", "--root", str(signed_run.parent))
    assert "verify+signatures" in runs.stdout and "untrusted" not in runs.stdout, runs.stdout


def test_an_unsigned_run_is_proven_by_verify_alone(tmp_path: Path) -> None:
    run = record_run(tmp_path / "runs", "plain", gbs=256, steps=20, evals=[(19, 0.72)], closed=True).path
    done = run_cli("replay", str(run))
    assert done.returncode == 0 and "proven by verify, not audited" in done.stdout, done.stdout


def test_trusted_keys_in_the_environment_judge_an_unsigned_run(
    tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = record_run(tmp_path / "runs", "plain", gbs=256, steps=20, evals=[(19, 0.72)], closed=True).path
    monkeypatch.setenv(TRUST_ENV, str(keys / "alice.pub"))
    done = run_cli("replay", str(run))
    assert done.returncode == 1 and f"rule {SIGNED_RUN_RULE}" in done.stderr, done.stdout + done.stderr


def test_a_writer_without_the_key_is_refused_on_a_signed_run_before_it_writes(signed_run: Path) -> None:
    before = sorted(p.name for p in (signed_run / "events").iterdir())
    with pytest.raises(Exception, match="a signed run"):
        LogWriter(signed_run, "evaluator", signer=None)
    assert sorted(p.name for p in (signed_run / "events").iterdir()) == before
