"""Same events, same bytes: across processes with different TZ / LC_ALL / PYTHONHASHSEED, and whatever the
order events arrive in or how segments are split and named."""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recorder.store.events import Event
from recorder.store.reader import read_run
from replay.derive import derive_run
from replay.interpretations import INTERPRETATIONS
from tests.replay.runs import CASES, record_run

DERIVABLE = [n for n in INTERPRETATIONS if n != "as-recorded"]
SCRIPT = """
import hashlib, sys
from recorder.store.reader import read_run
from replay.derive import derive_run
events = read_run(sys.argv[1]).events
out = b"".join(derive_run(events, "6.1.0", n).text().encode() for n in sys.argv[2:])
sys.stdout.write(hashlib.sha256(out).hexdigest())
"""


def _derive_all(events: list[Event]) -> bytes:
    return b"".join(derive_run(events, "6.1.0", n).text().encode() for n in DERIVABLE)


def test_separate_processes_with_different_tz_locale_hashseed(tmp_path: Path) -> None:
    run = record_run(tmp_path, "det", **CASES["arbitrary_order"])  # type: ignore[arg-type]
    digests = set()
    for tz, lc, seed in (
        ("UTC", "C", "0"),
        ("Asia/Kolkata", "C.UTF-8", "12345"),
        ("America/St_Johns", "POSIX", "random"),
    ):
        env = {**os.environ, "TZ": tz, "LC_ALL": lc, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(run.path), *DERIVABLE],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parents[2],
        )
        digests.add(out.stdout)
    assert digests == {hashlib.sha256(_derive_all(read_run(run).events)).hexdigest()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Event], bytes]:
    run = record_run(tmp_path_factory.mktemp("ref"), "ref", **CASES["descending"])  # type: ignore[arg-type]
    events = read_run(run).events
    return events, _derive_all(events)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_arrival_order_does_not_matter(seed: int, reference: tuple[list[Event], bytes]) -> None:
    events, expected = reference
    shuffled = list(events)
    random.Random(seed).shuffle(shuffled)
    assert _derive_all(shuffled) == expected


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_segment_split_and_order_do_not_matter(
    segments: int, seed: int, tmp_path_factory: pytest.TempPathFactory, reference: tuple[list[Event], bytes]
) -> None:
    """The evaluations recorded over 1-3 evaluator sessions, the sessions written in a shuffled order."""
    from recorder.store.log import LogWriter
    from tests.replay.runs import T0, S

    _, expected = reference
    root = tmp_path_factory.mktemp("seg")
    evals = list(enumerate(CASES["descending"]["evals"]))  # type: ignore[call-overload]
    run = record_run(root, "split", evals=[])
    chunks = [evals[i::segments] for i in range(segments)]
    random.Random(seed).shuffle(chunks)
    for chunk in chunks:
        with LogWriter(run, "evaluator") as w:
            for i, (step, acc) in chunk:
                at = T0 + (400 + 60 * i) * S
                w.append("eval_start", step=step, samples_count=step * 3840, time_ns=at)
                w.append(
                    "eval_result",
                    step=step,
                    samples_count=step * 3840,
                    key="accuracy",
                    value=acc,
                    time_ns=at + 59 * S,
                    data={"metric": "pass@4", "n": 251, "k": 4, "target": 0.69},
                )
                w.append(
                    "eval_result", step=step, samples_count=step * 3840, key="arc_easy", value=0.25, time_ns=at + 59 * S
                )
                w.append("eval_stop", step=step, samples_count=step * 3840, time_ns=at + 60 * S)
    assert _derive_all(read_run(run).events) == expected
