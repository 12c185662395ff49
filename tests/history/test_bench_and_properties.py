"""The benchmark at toy scale (its views and native peer must agree row for row), and a property:
compaction never changes what the views see."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recorder.history.compact import compact_run, pack_root
from recorder.history.views import VIEWS, open_history
from recorder.store.log import LogWriter
from recorder.store.run import RunDir

REPO = Path(__file__).resolve().parents[2]


def test_bench_runs_and_views_agree_with_a_native_table() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "history.py"), "--runs", "12", "--events", "2400", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "12 runs, 2,400 events" in done.stdout
    rows = {
        line[:36].strip(): line.split()[-1]
        for line in done.stdout.splitlines()
        if line[:36].strip() in ("per-run score", "checkpoint save overhead by run", "events of one kind over all runs")
    }
    assert rows == dict.fromkeys(rows, "12") and len(rows) == 3  # one row per run


def snapshot(root: Path) -> dict[str, list[dict]]:
    with open_history(root) as history:
        return {
            v: history.query(f"SELECT * FROM {v} ORDER BY ALL").drop(["source"] if v == "runs" else []).to_pylist()
            for v in VIEWS
        }


_event = st.tuples(
    st.sampled_from(
        ["weight_update", "step_metrics", "checkpoint_committed", "eval_start", "eval_result", "eval_stop"]
    ),
    st.integers(1, 5),
    st.floats(0, 1, allow_nan=False),
    st.integers(0, 10**12),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_event, max_size=12), min_size=1, max_size=3))
def test_compaction_and_packing_never_change_the_views(tmp_path_factory, sessions) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("prop")
    run = RunDir.create(root, "r")
    t0 = 1_780_000_000_000_000_000
    for i, events in enumerate(sessions):
        with LogWriter(run, f"w{i}", clock=lambda: t0) as w:
            for kind, step, x, dt in events:
                data = {"reward": x, "loss": 1 - x} if kind == "step_metrics" else {}
                if kind == "checkpoint_committed":
                    data = {
                        "weight_update_ns": t0 + dt,
                        "save_begin_ns": t0 + dt,
                        "save_end_ns": t0 + 2 * dt,
                        "blocked_ns": dt // 3,
                    }
                if kind == "eval_result":
                    data = {"target": 0.69}
                w.append(
                    kind,
                    step=step,
                    samples_count=step * 256,
                    time_ns=t0 + dt,
                    data=data,
                    key="accuracy" if kind == "eval_result" else None,
                    value=x if kind == "eval_result" else None,
                )
    before = snapshot(root)
    assert compact_run(run).status == "compacted"
    assert snapshot(root) == before
    pack_root(root)
    assert snapshot(root) == before
