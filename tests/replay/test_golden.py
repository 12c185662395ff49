"""Golden mllogs written from hand-computed times (tests/replay/golden/<case>/<interpretation>.txt) and the
hand-computed minutes of every interpretation in every case (tests/replay/runs.py has the timeline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder.store.reader import read_run
from replay.derive import derive_run
from replay.interpretations import INTERPRETATIONS
from tests.kit.synthetic import record_worked_example
from tests.replay.runs import CASES, T0, record_evals, record_run

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_FILES = sorted(GOLDEN.glob("*/*.txt"))

# (status, passing step, run_stop in seconds after run_start) by hand. Weight updates at 60, 120, 180, 240,
# 302, 364 s (each checkpoint from step 4 blocks 2 s), commits 30 s later, step metrics 2 s after the update;
# evaluations start at 400 s, 60 s each. Minutes = run_stop / 60.
EXPECTED: dict[str, dict[str, tuple[str, int | None, float]]] = {
    "val_start_pass": {
        "official": ("success", 4, 240),
        "earliest-passing": ("success", 4, 240),
        "include-final-save": ("success", 4, 270),
        "zero-save-cost": ("success", 4, 240),
        "inline-eval": ("success", 4, 240 + 60),
        "checker-order": ("success", 4, 240),
        "nemo-rl-ge": ("success", 4, 240),
    },
    "later_pass": {
        "official": ("success", 6, 364),
        "earliest-passing": ("success", 6, 364),
        "include-final-save": ("success", 6, 394),
        "zero-save-cost": ("success", 6, 364 - 4),
        "inline-eval": ("success", 6, 364 - 6 + 2 + 3 * 60),
        "checker-order": ("success", 6, 364),
        "nemo-rl-ge": ("success", 6, 364),
    },
    "aborted": {
        "official": ("aborted", None, 364),
        "earliest-passing": ("aborted", None, 364),
        "include-final-save": ("aborted", None, 394),
        "zero-save-cost": ("aborted", None, 360),
        "inline-eval": ("aborted", None, 540),
        "checker-order": ("aborted", None, 364),
        "nemo-rl-ge": ("aborted", None, 364),
    },
    "descending": {
        "official": ("success", 6, 364),
        "earliest-passing": ("success", 5, 302),
        "include-final-save": ("success", 6, 394),
        "zero-save-cost": ("success", 6, 360),
        "inline-eval": ("success", 5, 304 - 4 + 60 + 60),
        "checker-order": ("success", 5, 302),
        "nemo-rl-ge": ("success", 6, 364),
    },
    "arbitrary_order": {
        "official": ("success", 5, 302),
        "earliest-passing": ("success", 4, 240),
        "include-final-save": ("success", 5, 332),
        "zero-save-cost": ("success", 5, 300),
        "inline-eval": ("success", 4, 300),
        "checker-order": ("success", 4, 240),
        "nemo-rl-ge": ("success", 5, 302),
    },
    "several_passing": {
        "official": ("success", 5, 302),
        "earliest-passing": ("success", 5, 302),
        "include-final-save": ("success", 5, 332),
        "zero-save-cost": ("success", 5, 300),
        "inline-eval": ("success", 5, 420),
        "checker-order": ("success", 5, 302),
        "nemo-rl-ge": ("success", 4, 240),
    },
    "late_metrics": {
        "official": ("success", 5, 302),
        "earliest-passing": ("success", 5, 302),
        "include-final-save": ("success", 5, 332),
        "zero-save-cost": ("success", 5, 300),
        "inline-eval": ("success", 5, 420),
        "checker-order": ("success", 5, 302),
        "nemo-rl-ge": ("success", 5, 302),
    },
}


@pytest.fixture(scope="module")
def case_events(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list]:  # type: ignore[type-arg]
    root = tmp_path_factory.mktemp("golden")
    return {name: read_run(record_run(root, name, **kw)).events for name, kw in CASES.items()}  # type: ignore[arg-type]


@pytest.mark.parametrize("golden", GOLDEN_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_derived_log_equals_golden_file(golden: Path, case_events: dict[str, list]) -> None:  # type: ignore[type-arg]
    derived = derive_run(case_events[golden.parent.name], "6.1.0", golden.stem)
    assert derived.text() == golden.read_text()


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_hand_computed_minutes_of_every_interpretation(case: str, case_events: dict[str, list]) -> None:  # type: ignore[type-arg]
    for name, (status, passing, stop_s) in EXPECTED[case].items():
        d = derive_run(case_events[case], "6.1.0", name)
        assert (d.status, d.passing_step) == (status, passing), (case, name)
        assert d.run_stop_ns == T0 + int(stop_s * 1e9), (case, name)
        assert d.minutes == pytest.approx(stop_s / 60, abs=1e-9), (case, name)


def test_each_interpretation_differs_from_official_somewhere() -> None:
    for name in INTERPRETATIONS:
        if name in ("official", "as-recorded"):
            continue
        assert any(EXPECTED[c][name] != EXPECTED[c]["official"] for c in EXPECTED), name


def test_golden_covers_the_required_cases() -> None:
    cases = {p.parent.name for p in GOLDEN_FILES}
    assert cases == set(CASES)
    differing = {p.stem for p in GOLDEN_FILES if p.stem != "official"}
    assert differing >= set(INTERPRETATIONS) - {"official", "as-recorded"}


def test_last_step_metrics_after_an_evaluation_began_stay_in_the_training_block(case_events: dict[str, list]) -> None:  # type: ignore[type-arg]
    lines = derive_run(case_events["late_metrics"], "6.1.0", "official").lines
    keys = [line.split('"key": "')[1].split('"')[0] for line in lines]
    last_stats = max(i for i, k in enumerate(keys) if k == "tracked_stats")
    assert last_stats < keys.index("block_stop") < keys.index("eval_start")
    assert keys[-1] == "run_stop"


def test_design_worked_example(tmp_path: Path) -> None:
    """docs/design.md section 5: GBS 256, evaluations 19 (0.72), 18 (0.70), 20 (0.71) from 1300 s, 60 s each."""
    run = record_worked_example(tmp_path, "worked")
    record_evals(run, [(19, 0.72), (18, 0.70), (20, 0.71)], 256, 1300, 60)
    events = read_run(run).events
    table = {
        "official": (19, 1142),
        "earliest-passing": (18, 1080),
        "include-final-save": (19, 1172),
        "zero-save-cost": (19, 1140),
        "inline-eval": (18, 1140),
        "checker-order": (18, 1080),
        "nemo-rl-ge": (19, 1142),
    }
    for name, (step, stop_s) in table.items():
        d = derive_run(events, "6.1.0", name)
        assert (d.passing_step, d.run_stop_ns) == (step, T0 + stop_s * 10**9), name
        assert round(d.minutes or 0, 3) == round(stop_s / 60, 3)


def test_zero_shot_sessions_do_not_change_the_benchmark_log(tmp_path: Path) -> None:
    """Harness sessions (writer "harness") start, score, fail and stop around the benchmark's evaluations:
    every interpretation derives the same bytes as without them."""
    from recorder.store.log import LogWriter
    from tests.replay.runs import S

    plain = record_run(tmp_path, "plain", **CASES["arbitrary_order"])  # type: ignore[arg-type]
    mixed = record_run(tmp_path, "mixed", **CASES["arbitrary_order"])  # type: ignore[arg-type]
    with LogWriter(mixed, "harness", clock=lambda: T0) as w:
        # Step 5's benchmark evaluation runs 400-460 s (result at 459 s). A zero-shot session of the same
        # checkpoint starts inside it and stops between its result and its stop; step 6 is scored later.
        for step, start_ns, stop_ns in ((5, 430 * S, 459 * S + S // 2), (6, 700 * S, 702 * S)):
            w.append("eval_start", step=step, samples_count=step * 3840, time_ns=T0 + start_ns)
            w.append(
                "eval_result",
                step=step,
                samples_count=step * 3840,
                key="arc_easy",
                value=0.9,
                time_ns=T0 + start_ns + S,
            )
            w.append("eval_stop", step=step, samples_count=step * 3840, time_ns=T0 + stop_ns)
        w.append(
            "eval_failed",
            step=7,
            samples_count=7 * 3840,
            time_ns=T0 + 710 * S,
            data={"reason": "no data for task siqa", "error": "HarnessDataError"},
        )
    for name in INTERPRETATIONS:
        if name == "as-recorded":
            continue
        want = derive_run(read_run(plain.path).events, "6.1.0", name)
        got = derive_run(read_run(mixed.path).events, "6.1.0", name)
        assert (got.lines, got.passing_step, got.run_stop_ns, got.why) == (
            want.lines,
            want.passing_step,
            want.run_stop_ns,
            want.why,
        ), name
