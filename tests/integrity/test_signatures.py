"""Optional Ed25519 signatures on segments, and `verify --trust`.

A signed segment verifies under the key that signed it, is reported as signed by an untrusted key under
another, and any rewrite after signing (rechained, old signature kept, or signature stripped) is a bad
signature. What a signature cannot catch is said too: a segment stripped of its key entirely reads as
unsigned, which only `--require-signed` refuses.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from recorder import signing
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import SIGNATURE_RULE, verify_run
from replay.derive import derive
from tests.helpers import run_cli
from tests.integrity.forge import rewrite, rows, write
from tests.kit.synthetic import record_run


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two key pairs made by `recorder keygen`: alice and bob (and alice.pub, bob.pub)."""
    where = tmp_path_factory.mktemp("keys")
    for name in ("alice", "bob"):
        done = run_cli("keygen", "-o", str(where / name))
        assert done.returncode == 0, done.stderr
    return where


@pytest.fixture
def signed_run(keys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run with a trainer and an evaluator segment, recorded with alice's key."""
    monkeypatch.setenv(signing.SIGNING_KEY_ENV, str(keys / "alice"))
    return _record(tmp_path, "signed")


def _record(root: Path, run_id: str) -> Path:
    return record_run(root, run_id, gbs=256, steps=20, evals=[(19, 0.72), (18, 0.70)], closed=True).path


def _verify(run: Path, *args: str) -> tuple[int, dict[str, str]]:
    """verify's exit code and, per segment, the signature it reports (the text after `closed  `)."""
    done = run_cli("verify", str(run), *args)
    assert "Traceback" not in done.stderr, done.stderr
    states = {}
    for line in done.stdout.splitlines():
        if line.startswith("  ") and ".arrows" in line:
            name, rest = line.split()[0], line.split("  closed  ", 1)
            states[name] = rest[1] if len(rest) == 2 else ""
    return done.returncode, states


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(keys: Path) -> None:
    assert stat.S_IMODE(os.stat(keys / "alice").st_mode) == 0o600
    assert (keys / "alice.pub").read_text().startswith("ssh-ed25519 ")
    again = run_cli("keygen", "-o", str(keys / "alice"))
    assert again.returncode == 2 and "already exists" in again.stderr
    assert signing.load_trusted([keys / "alice.pub"]) != signing.load_trusted([keys / "bob.pub"])


def test_signed_segments_verify_under_the_right_key(signed_run: Path, keys: Path) -> None:
    report = verify_run(signed_run)
    assert report.ok, report.problems
    (alice,) = signing.load_trusted([keys / "alice.pub"])
    assert [s.signed_by for s in report.segments] == [alice, alice]
    code, states = _verify(signed_run, "--trust", str(keys / "bob.pub"), "--trust", str(keys / "alice.pub"))
    assert code == 0
    assert states == {"evaluator-0001.arrows": "signed by alice.pub", "trainer-0001.arrows": "signed by alice.pub"}
    assert run_cli("verify", str(signed_run), "--trust", str(keys / "alice.pub"), "--require-signed").returncode == 0


def test_under_another_key_they_are_reported_untrusted_and_fail(signed_run: Path, keys: Path) -> None:
    code, states = _verify(signed_run, "--trust", str(keys / "bob.pub"))
    assert code == 1
    assert set(states.values()) == {f"signed by an untrusted key ({signing.fingerprint(*_key(keys, 'alice'))})"}
    code, _ = _verify(signed_run, "--trust", str(keys / "bob.pub"), "--require-signed")
    assert code == 1


def _key(keys: Path, name: str) -> list[str]:
    return list(signing.load_trusted([keys / f"{name}.pub"]))


def test_unsigned_segments_pass_alone_and_fail_under_trusted_keys(tmp_path: Path, keys: Path) -> None:
    run = _record(tmp_path, "plain")
    assert _verify(run)[0] == 0
    code, states = _verify(run, "--trust", str(keys / "alice.pub"))
    assert code == 1 and set(states.values()) == {"unsigned"}
    assert _verify(run, "--trust", str(keys / "alice.pub"), "--require-signed")[0] == 1
    assert run_cli("verify", str(run), "--require-signed").returncode == 2  # nothing to trust: a usage error


def test_a_rechained_edited_segment_with_the_old_signature_is_a_bad_signature(signed_run: Path, keys: Path) -> None:
    trainer = signed_run / "events" / "trainer-0001.arrows"
    old_signature = rows(trainer)[-1]["data"]["signature"]

    def later_run_start(events: list[dict[str, object]]) -> list[dict[str, object]]:
        for e in events:
            if e["kind"] == "run_start":
                e["time_ns"] = int(str(e["time_ns"])) + 1  # one nanosecond: a score changes, the chain is recomputed
        return events

    rewrite(trainer, later_run_start)
    assert rows(trainer)[-1]["data"]["signature"] == old_signature  # kept; every digest recomputed
    problems = verify_run(signed_run).problems
    assert [(p.segment, p.rule) for p in problems] == [("trainer-0001.arrows", SIGNATURE_RULE)]
    assert problems[0].message.startswith("bad signature")
    code, states = _verify(signed_run, "--trust", str(keys / "alice.pub"))
    assert code == 1 and states["evaluator-0001.arrows"] == "signed by alice.pub"
    done = run_cli("verify", str(signed_run))
    assert "ALTERED: trainer-0001.arrows seq " in done.stdout and "[rule signature]" in done.stdout
    replay = run_cli("replay", str(signed_run))
    assert replay.returncode == 1 and "fails verification" in replay.stderr


def test_a_signature_stripped_from_a_rechained_segment_is_a_bad_signature(signed_run: Path) -> None:
    trainer = signed_run / "events" / "trainer-0001.arrows"
    events = rows(trainer)
    events[-1]["data"] = {"events": events[-1]["data"]["events"]}
    write(trainer, events)
    assert [p.rule for p in verify_run(signed_run).problems] == [SIGNATURE_RULE]


def _strip_key(segment: Path) -> None:
    events = [e for e in rows(segment) if e["kind"] not in ("segment_opened", "chain_signed")]
    events[-1]["data"] = {"events": len(events) - 1}
    write(segment, events)


def test_a_segment_stripped_of_its_key_in_a_signed_run_fails(signed_run: Path, keys: Path) -> None:
    """A signed run is judged by its own key: one segment made unsigned fails with no key given."""
    _strip_key(signed_run / "events" / "evaluator-0001.arrows")
    code, states = _verify(signed_run)
    assert code == 1 and states["evaluator-0001.arrows"] == ""
    assert (
        "evaluator-0001.arrows: unsigned, in a run that must be signed by the run's key"
        in run_cli("verify", str(signed_run)).stdout
    )


def test_a_run_stripped_of_every_key_is_refused_only_under_trusted_keys(signed_run: Path, keys: Path) -> None:
    """The limit of signatures: whoever can rewrite the run can remove every key and the signed list; only
    the keys a reviewer trusts (--trust, RECORDER_TRUST) then refuse it. It cannot forge a signature."""
    for segment in (signed_run / "events").iterdir():
        _strip_key(segment)
    (signed_run / "signed-segments.json").unlink()
    assert _verify(signed_run)[0] == 0
    code, states = _verify(signed_run, "--trust", str(keys / "alice.pub"))
    assert code == 1 and states["trainer-0001.arrows"] == "unsigned"


def test_a_signed_segment_pasted_into_another_run_is_caught(signed_run: Path, tmp_path: Path, keys: Path) -> None:
    """A valid signature travels with its segment, but the segment names its own run."""
    other = _record(tmp_path, "other")
    (other / "events" / "evaluator-0001.arrows").unlink()
    os.link(signed_run / "events" / "evaluator-0001.arrows", other / "events" / "evaluator-0001.arrows")
    problems = verify_run(other).problems
    assert [(p.segment, p.message) for p in problems] == [
        ("evaluator-0001.arrows", "run_id 'signed', but this run's other events say 'other'")
    ]


def test_signing_changes_no_derived_byte(
    signed_run: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(signing.SIGNING_KEY_ENV)
    plain = _record(tmp_path_factory.mktemp("plain"), "signed")
    signing_kinds = Counter(e.kind for e in read_run(signed_run).events) - Counter(
        e.kind for e in read_run(plain).events
    )
    # a segment_opened per segment, and a chain_signed at each durable point: nothing else differs
    assert set(signing_kinds) == {"segment_opened", "chain_signed"} and signing_kinds["segment_opened"] == 2
    for interpretation in ("official", "earliest-passing", "checker-order"):
        signed_lines = derive(read_run(signed_run).events, "6.1.0", interpretation)
        assert signed_lines == derive(read_run(plain).events, "6.1.0", interpretation)


def test_a_writer_that_did_not_close_is_reported_unsigned_with_the_key_it_opened_and_fails(
    tmp_path: Path, keys: Path
) -> None:
    run = RunDir.create(tmp_path, "torn")
    killed = (  # the process dies after an append: no closing record, so no signature
        "import os, sys; from recorder.store.log import LogWriter; from recorder.store.kinds import RunStart; "
        "LogWriter(sys.argv[1], 'trainer').append(RunStart()); os._exit(0)"
    )
    env = {**os.environ, signing.SIGNING_KEY_ENV: str(keys / "alice")}
    subprocess.run([sys.executable, "-c", killed, str(run.path)], check=True, env=env)
    done = run_cli("verify", str(run.path), "--trust", str(keys / "alice.pub"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "open (writer did not close)  unsigned (opened with ed25519:" in done.stdout, done.stdout
    assert "its writer did not close, so its events are not signed" in done.stdout


def test_a_bad_key_is_refused_before_anything_is_written(tmp_path: Path, keys: Path) -> None:
    log = tmp_path / "result_0.txt"
    log.write_text(':::MLLOG {"key": "run_start", "value": null, "time_ms": 1, "event_type": "INTERVAL_START"}\n')
    for key in (tmp_path / "missing", keys / "alice.pub"):
        done = run_cli("import", str(log), "--root", str(tmp_path / "runs"), "--signing-key", str(key))
        assert done.returncode == 2 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr
        assert not (tmp_path / "runs").exists()


def test_an_intact_run_signed_by_another_key_is_untrusted_not_altered(keys: Path, tmp_path: Path, corpus: Path) -> None:
    """As docs/cli.md shows it: alice signs an import, bob's key is the one trusted. Nothing was altered, so
    nothing is called ALTERED; the run is untrusted, exit 1."""
    log = corpus / "qwen35_397b_grpo_rcp/GBS256/seed_1.out"
    imported = run_cli(
        "import", str(log), "--root", str(tmp_path), "--run-id", "signed", "--signing-key", str(keys / "alice")
    )
    assert imported.returncode == 0, imported.stderr
    done = run_cli("verify", str(tmp_path / "signed"), "--trust", str(keys / "bob.pub"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ALTERED" not in done.stdout and "Traceback" not in done.stderr
    assert "UNTRUSTED: import-0001.arrows: signed by ed25519:" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("verify: UNTRUSTED (2 problems: not signed by an accepted key;")
    trusted = run_cli("verify", str(tmp_path / "signed"), "--trust", str(keys / "alice.pub"))
    assert trusted.returncode == 0 and trusted.stdout.splitlines()[-1] == "verify: intact"


def test_a_rewritten_run_under_another_key_is_still_altered(signed_run: Path, keys: Path) -> None:
    trainer = signed_run / "events" / "trainer-0001.arrows"
    rewrite(trainer, lambda events: [{**e, "time_ns": int(str(e["time_ns"])) + 1} for e in events])
    done = run_cli("verify", str(signed_run), "--trust", str(keys / "bob.pub"))
    assert done.returncode == 1 and "ALTERED: trainer-0001.arrows" in done.stdout, done.stdout
    assert done.stdout.splitlines()[-1].startswith("verify: FAILED (")
