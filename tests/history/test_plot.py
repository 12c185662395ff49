"""`recorder plot`: the timeline's facts, the files it writes, and its bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder.history.plot import load_timeline
from recorder.history.views import open_history
from tests.helpers import run_in_process

pytest.importorskip("matplotlib")
PNG = b"\x89PNG\r\n\x1a\n"


def test_timeline_facts_in_minutes_after_run_start(history_root: Path) -> None:
    with open_history(history_root) as history:
        t = load_timeline(history, "worked")
    assert [s for s, *_ in t.steps] == list(range(1, 21))
    assert t.steps[18][1] == pytest.approx(1142 / 60)  # step 19's weight update
    # (step, save begin, end of the blocking part, end of the background write)
    assert t.saves[0] == pytest.approx((18, 1080 / 60, 1082 / 60, 1110 / 60))
    assert [(s, round(a * 60), round(b * 60), v) for s, a, b, v, _ in t.evals] == [
        (19, 1300, 1360, 0.72),
        (18, 1360, 1420, 0.70),
        (20, 1420, 1480, 0.71),
    ]
    stops = {name: (round(minutes * 60), step) for name, minutes, step, _ in t.stops}
    assert stops == {
        "official": (1142, 19),
        "earliest-passing": (1080, 18),
        "include-final-save": (1172, 19),
        "zero-save-cost": (1140, 19),
        "inline-eval": (1140, 18),
        "checker-order": (1080, 18),
    }
    assert t.stops[0][0] == "official"  # the official reading is drawn first


def test_plot_run_and_metric_across_runs(history_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "worked.png"
    done = run_in_process("plot", str(history_root / "worked"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(PNG)
    imported = tmp_path / "imported.png"
    done = run_in_process("plot", str(history_root / "rcp-gbs256-seed1"), "-o", str(imported))
    assert done.returncode == 0, done.stderr
    curves = tmp_path / "reward.png"
    done = run_in_process("plot", "--root", str(history_root), "--metric", "reward", "-o", str(curves))
    assert done.returncode == 0, done.stderr
    assert curves.read_bytes().startswith(PNG)
    scores = tmp_path / "accuracy.png"  # an evaluation key, as zero-shot task names are
    done = run_in_process("plot", "--root", str(history_root), "--metric", "accuracy", "-o", str(scores))
    assert done.returncode == 0, done.stderr
    assert scores.read_bytes().startswith(PNG)


def test_plot_bad_input(history_root: Path, tmp_path: Path) -> None:
    done = run_in_process("plot", "--root", str(history_root), "--metric", "nope", "-o", str(tmp_path / "x.png"))
    assert done.returncode == 2 and "unknown metric 'nope'" in done.stderr and "reward" in done.stderr
    assert "evaluation key (accuracy" in done.stderr
    done = run_in_process("plot", str(history_root / "damaged"), "-o", str(tmp_path / "d.png"))
    assert done.returncode == 2 and "cannot draw" in done.stderr and "altered" in done.stderr
    done = run_in_process("plot", "-o", str(tmp_path / "n.png"))
    assert done.returncode == 2 and "RUN_DIR" in done.stderr
    assert not any(tmp_path.iterdir())


def test_zoomed_panel_is_the_scored_region_plus_a_margin(history_root: Path) -> None:
    from recorder.history.plot import ZOOM_MARGIN, zoom_range

    with open_history(history_root) as history:
        t = load_timeline(history, "worked")
    lo, hi = zoom_range(t)
    first_save, last_stop = 1080 / 60, 1172 / 60  # step 18's save; include-final-save's run_stop
    margin = (last_stop - first_save) * ZOOM_MARGIN
    assert (lo, hi) == pytest.approx((first_save - margin, last_stop + margin))
    assert hi < 1300 / 60  # the offline evaluations that follow are not scored: they do not stretch it


def test_accuracy_across_runs_draws_the_target_and_integer_steps(history_root: Path) -> None:
    import matplotlib.pyplot as plt

    from recorder.history.plot import metric_figure
    from recorder.rules import TARGET

    with open_history(history_root) as history:
        for metric in ("accuracy", "reward"):
            fig = metric_figure(history, metric)
            ax = fig.axes[0]
            flat = [line for line in ax.lines if len(set(line.get_ydata())) == 1 and line.get_ydata()[0] == TARGET]
            assert bool(flat) == (metric == "accuracy"), metric
            fig.canvas.draw()
            assert all(float(x).is_integer() for x in ax.get_xticks()), ax.get_xticks()
            styles = [(line.get_marker(), line.get_linestyle()) for line in ax.lines if line not in flat]
            assert len(set(styles)) == len(styles)  # overlapping runs stay distinguishable
            plt.close(fig)


def test_the_zoomed_panel_is_drawn_at_the_scored_region(history_root: Path) -> None:
    import matplotlib.pyplot as plt

    from recorder.history.plot import timeline_figure, zoom_range

    with open_history(history_root) as history:
        t = load_timeline(history, "worked")
    fig = timeline_figure(t)
    whole, zoomed = fig.axes[:2]
    assert zoomed.get_xlim() == pytest.approx(zoom_range(t))
    assert zoomed.get_xlim()[1] - zoomed.get_xlim()[0] < (whole.get_xlim()[1] - whole.get_xlim()[0]) / 10
    plt.close(fig)


def test_a_failed_runs_picture_says_why(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from recorder.history.plot import timeline_figure
    from replay.scorekeeping.scores import write_scores
    from tests.history import report_runs

    for run in (report_runs.failed(tmp_path), report_runs.aborted(tmp_path), report_runs.converged(tmp_path)):
        write_scores(run, check=False)
    said = {}
    with open_history(tmp_path) as history:
        for run_id in ("failed", "aborted", "converged"):
            fig = timeline_figure(load_timeline(history, run_id))
            said[run_id] = fig._suptitle.get_text()
            plt.close(fig)
    assert "did not converge (official): no evaluated checkpoint passes the target (> 0.69); " in said["failed"]
    assert "the best scored 0.6800 at step 20" in said["failed"]
    assert "no checkpoint was saved" in said["aborted"]
    assert "training interrupted: interrupted by the user (SIGINT)" in said["aborted"]
    assert "converged (official): step 19 passes; run_stop at 19.033 min" in said["converged"]
