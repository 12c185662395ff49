"""The sweep: checkpoints handed out to workers in the chosen order, and the first pass *in that
order* decides, even when a later checkpoint finishes first. Bookkeeping as a property; then real Ray actors
on real tiny checkpoints, with a test-only command that makes the first checkpoint in order end last."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluator.cluster.sweep import HandOut
from evaluator.session import StepOutcome, evaluate_run
from evaluator.settings import Options
from recorder.store.reader import read_run
from recorder.verify import verify_run
from replay.derive import derive_run
from tests.evaluator.synth import record_run

PASS_NONE = 1.0  # random models score 0.0, which never passes 1.0


@st.composite
def schedules(draw: st.DrawFn) -> tuple[list[int], dict[int, bool], int, list[int]]:
    """(order, which steps pass, slots, the order running checkpoints end in: indexes into the running)."""
    n = draw(st.integers(1, 7))
    order = draw(st.permutations(range(18, 18 + n)))
    passing = {s: draw(st.booleans()) for s in order}
    slots = draw(st.integers(1, 4))
    picks = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    return list(order), passing, slots, picks


@given(schedules())
def test_the_first_pass_in_order_decides_whatever_ends_first(
    s: tuple[list[int], dict[int, bool], int, list[int]],
) -> None:
    order, passing, slots, picks = s
    h = HandOut(order)
    running: list[int] = []
    for pick in [*picks, *[0] * len(order)]:
        while len(running) < slots and (step := h.next()) is not None:
            earlier = order[: order.index(step)]
            assert not any(h.ended.get(x) for x in earlier), "handed out after a pass that precedes it"
            h.start(step)
            running.append(step)
        if not running:
            break
        step = running.pop(pick % len(running))  # any running checkpoint may end next
        h.end(step, passing[step])
    first = next((s for s in order if passing[s]), None)
    assert h.deciding == first
    assert h.started == order[: len(h.started)]  # handed out in the chosen order
    if first is None:
        assert h.started == order  # nothing passed: everything was evaluated
    assert h.remaining() == []


def test_the_limit_leaves_the_rest_remaining() -> None:
    h = HandOut([20, 18, 19], limit=1)
    assert h.next() == 20
    h.start(20)
    assert h.next() is None
    h.end(20, False)
    assert h.remaining() == [18, 19] and h.deciding is None


# The test-only slow backend: the first checkpoint in order waits until the driver has recorded the second's
# outcome, so the second ends first on any machine and under any load (a wait on an event, not a sleep).
SLOW_FIRST = """
import json, pathlib, sys, time
checkpoint, out, markers, accuracies = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]), sys.argv[4]
step = int(pathlib.Path(checkpoint).name.removeprefix("step_"))
accuracy = json.loads(accuracies)[str(step)]
if step == 18:
    deadline = time.monotonic() + 300
    while not (markers / "recorded-19").exists():
        if time.monotonic() > deadline:
            sys.exit("step 19 was never recorded")
        time.sleep(0.02)
out.write_text(json.dumps({"accuracy": accuracy, "samples": 1}))
"""


@pytest.mark.parametrize(("first_passes", "deciding"), [(True, 18), pytest.param(False, 19, marks=pytest.mark.slow)])
def test_a_later_checkpoint_that_ends_first_cannot_decide(
    tmp_path: Path, ray_cluster: None, first_passes: bool, deciding: int
) -> None:
    run = record_run(tmp_path / "runs", steps=20, target=0.5, samples=2)
    script, markers = tmp_path / "slow_first.py", tmp_path / "markers"
    script.write_text(SLOW_FIRST)
    markers.mkdir()
    accuracies = json.dumps({"18": 1.0 if first_passes else 0.0, "19": 1.0, "20": 1.0})
    command = f"{sys.executable} {script} {{checkpoint}} {{out}} {markers} '{accuracies}'"
    ended: list[int] = []

    def mark(o: StepOutcome) -> None:
        ended.append(o.step)
        (markers / f"recorded-{o.step}").touch()

    s = evaluate_run(run.path, Options(workers=2, backend="command", command=command), on_outcome=mark)
    assert ended == [19, 18]  # the second in order ended first ...
    assert [o.step for o in s.outcomes] == [18, 19] and s.passing_step == deciding  # ... and decided nothing
    events = [(e.kind, e.step) for e in read_run(run.path).events if e.kind.startswith("eval_")]
    assert ("eval_start", 20) not in events  # it comes after a pass in order: never handed out
    assert events.index(("eval_result", 19)) < events.index(("eval_result", 18))
    starts = [e for e in read_run(run.path).events if e.kind == "eval_start"]
    assert {e.data["worker"] for e in starts} == {"ray:2 #0", "ray:2 #1"}  # one checkpoint per actor
    assert verify_run(run.path).ok
    assert derive_run(read_run(run.path).events, "6.1.0", "official").passing_step == deciding


def _completions(run_path: Path) -> dict[int, list[str]]:
    out = {}
    for e in read_run(run_path).events:
        if e.kind == "eval_result":
            doc = json.loads((run_path / e.data["results"]).read_text())
            out[e.step] = [x["completion_sha256"] for x in doc["samples"]]
    return out


@pytest.mark.slow  # the default tier's test_invariance.py compares one worker with two Ray workers
def test_one_worker_and_two_ray_workers_give_the_same_completions(tmp_path: Path, ray_cluster: None) -> None:
    runs = {n: record_run(tmp_path / f"w{n}", steps=19, target=PASS_NONE, samples=4, sharpen=1.0) for n in (1, 2)}
    for n, run in runs.items():
        s = evaluate_run(run.path, Options(workers=n, all=True, batch_size=3))
        assert [o.status for o in s.outcomes] == ["scored", "scored"]
    one, two = _completions(runs[1].path), _completions(runs[2].path)
    assert sorted(one) == [18, 19] and one == two
    assert len(set(one[18])) > 1  # samples differ by seed: equal lists are evidence, not a constant
    workers = {e.data["worker"] for e in read_run(runs[2].path).events if e.kind == "eval_start"}
    assert workers == {"ray:2 #0", "ray:2 #1"}
