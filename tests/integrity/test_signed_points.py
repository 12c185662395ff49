"""A signed writer signs its chain at each durable point (`chain_signed`), so a writer killed with SIGKILL
leaves a segment whose signed prefix a resuming writer can adopt, and nothing past it (recorder.store.adoption).

The writer here is a real process appending a signed trainer segment, killed with a real SIGKILL; the
adoption is the library's, so these run in the default tier (the `recorder train --resume` end to end is
tests/integrity/test_adoption.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from recorder.signing import Signer, generate, load_signer, load_trusted
from recorder.store.adoption import TAIL_PREFIX, adopt, adoptable
from recorder.store.catalogue import critical_kinds
from recorder.store.log import LogWriter
from recorder.store.reader import read_segment
from recorder.store.run import RunDir
from recorder.store.signed_segments import Entry, record_signed_segment
from recorder.verify import verify_run
from tests.integrity.forge import rows, write_open

SEGMENT = "trainer-0001.arrows"
WRITER = textwrap.dedent(
    """
    import sys
    from recorder.store.kinds import RunOpened, WeightUpdate
    from recorder.store.log import LogWriter
    from recorder.store.run import RunDir
    from recorder.signing import load_signer

    run = RunDir.create(sys.argv[1], "k")
    w = LogWriter(run, "trainer", signer=load_signer(sys.argv[2]))
    w.append(RunOpened(benchmark="qwen35_397b_grpo", ruleset="6.1.0", division="open", global_batch_size=256,
                       target=None, config={}, provenance={}, resumed_from=None))
    step = 0
    while True:
        step += 1
        w.append(WeightUpdate(), step=step, samples_count=step * 256)
        for _ in range(int(sys.argv[3])):
            w.append("step_metrics", step=step, samples_count=step * 256, data={"loss": 0.5})
        print(f"step {step}", flush=True)
    """
)


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("key")
    generate(where / "alice")
    return where / "alice"


def _killed(where: Path, key: Path, after_steps: int, metrics_per_step: int = 20) -> RunDir:
    """A signed writer process, SIGKILLed once it printed `after_steps` steps."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(where), str(key), str(metrics_per_step)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == f"step {after_steps}":
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    return RunDir.open(where / "k")


def _resume(run: RunDir, signer: Signer) -> None:
    """What `recorder train --resume` does with a signed key: adopt, then a new segment of its own."""
    report = verify_run(run, untrusted_ok=True, facts=False)
    assert report.ok, report.problems
    adopt(run, signer, adoptable(run, report.segments, "trainer", signer.public_key_hex))
    with LogWriter(run, "trainer", signer=signer) as w:
        w.append("weight_update", step=99)


def _trust_problems(run: RunDir, key: Path) -> list[tuple[str, str]]:
    report = verify_run(run, trusted=load_trusted([key.with_name(key.name + ".pub")]), facts=False)
    return [(p.rule, p.segment) for p in report.problems]


def test_every_critical_event_is_followed_by_its_signature(tmp_path: Path, key: Path) -> None:
    run = _killed(tmp_path, key, after_steps=3)
    events = read_segment(run.events / SEGMENT).events()
    critical = [i for i, e in enumerate(events) if e.kind in critical_kinds() and e.kind != "segment_opened"]
    # the last critical event may be the one the kill cut short of its signature: that one is in the tail
    assert len(critical) > 3 and all(events[i + 1].kind == "chain_signed" for i in critical if i + 1 < len(events))


@pytest.mark.parametrize("after_steps", [1, 4, 9])
def test_a_killed_signed_writer_is_adopted_up_to_its_last_signature(
    tmp_path: Path, key: Path, after_steps: int
) -> None:
    run = _killed(tmp_path, key, after_steps)
    before = (run.events / SEGMENT).read_bytes()
    signed = max(i for i, e in enumerate(rows(run.events / SEGMENT)) if e["kind"] == "chain_signed")
    _resume(run, load_signer(key))
    assert _trust_problems(run, key) == []
    kept = rows(run.events / SEGMENT)
    assert len(kept) == signed + 1 and kept[-1]["kind"] == "chain_signed"
    tail = run.path / f"{TAIL_PREFIX}{SEGMENT}"
    after = (run.events / SEGMENT).read_bytes()
    assert after + (tail.read_bytes() if tail.exists() else b"") == before  # nothing lost: set aside


def test_an_event_rewritten_before_a_signature_is_refused(tmp_path: Path, key: Path) -> None:
    run = _killed(tmp_path, key, after_steps=4)
    segment = run.events / SEGMENT
    events = rows(segment)
    metrics = next(e for e in events if e["kind"] == "step_metrics" and e["step"] == 2)
    metrics["data"] = {"loss": 0.01}
    write_open(segment, events)  # rechained: every digest recomputed
    report = verify_run(run, untrusted_ok=True, facts=False)
    assert [(p.rule, p.segment) for p in report.problems] == [("signature", SEGMENT)]
    assert "chain_signed" in report.problems[0].message


def test_an_adoption_past_the_last_signature_is_refused(tmp_path: Path, key: Path) -> None:
    """A manifest listing the whole killed segment, as adoption did before it was bound to signatures (or as a
    key holder's tool might list a forged tail): refused, naming where the writer's signature ends."""
    run = _killed(tmp_path, key, after_steps=2, metrics_per_step=3)
    segment = run.events / SEGMENT
    events = rows(segment)
    write_open(segment, [*events, {**events[-1], "kind": "step_metrics", "data": {"loss": 0.01}}])
    report = verify_run(run, untrusted_ok=True, facts=False)
    s = next(x for x in report.segments if x.name == SEGMENT)
    assert s.signed_point is not None and s.signed_point.events < s.events
    signer = load_signer(key)
    record_signed_segment(
        run, "k", signer, SEGMENT, Entry(events=s.events, digest=s.digest or "", adopted_bytes=s.size)
    )
    problems = verify_run(run, trusted=load_trusted([key.with_name("alice.pub")]), facts=False).problems
    assert [(p.rule, p.seq) for p in problems] == [("adopted-segment", s.signed_point.events)], problems
    assert "signed only its first" in problems[0].message
