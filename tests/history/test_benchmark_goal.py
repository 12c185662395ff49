"""An imported llama2_70b_lora result folder is judged by its own goal (lower is better, at most 0.925).

replay scores it as recorded; `recorder evals`, the views behind `recorder runs`, the report and the plot
must agree with replay on which step passes and on the target, and call no evaluation above 0.925 a pass.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from recorder.history.views import open_history
from tests.helpers import run_in_process

FOLDER = "mlperf-results/training_results_v5.1/AMD/results/MI355X_EPYC_9575F_pytorch/llama2_70b_lora"
TARGET = 0.925


@pytest.fixture(scope="module")
def imported(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lora") / "runs"
    done = run_in_process("import", str(corpus / FOLDER), "--root", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def _replayed_step(run: Path) -> int:
    done = run_in_process("replay", str(run))
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"as-recorded: success, passing step (\d+)", " ".join(done.stdout.split()))
    assert found, done.stdout
    return int(found.group(1))


def _evals(run: Path) -> tuple[str, list[tuple[int, float, str]]]:
    done = run_in_process("evals", str(run))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = []
    for line in done.stdout.splitlines():
        cells = line.split()
        if len(cells) >= 7 and cells[0].isdigit() and cells[4] == "scored":
            rows.append((int(cells[0]), float(cells[5]), cells[6]))
    return done.stdout.splitlines()[0], rows


def test_evals_and_the_views_agree_with_replay(imported: Path) -> None:
    runs = sorted(p for p in imported.iterdir() if (p / "events").is_dir())[:3]
    for run in runs:
        step = _replayed_step(run)
        title, rows = _evals(run)
        assert "pass means <= 0.925" in title and "0.69" not in title
        assert rows and all((verdict == "yes") == (value <= TARGET) for _, value, verdict in rows), rows
        assert [s for s, _, verdict in rows if verdict == "yes"] == [step]  # training stops at its first pass
    with open_history(imported) as history:
        for run in runs:
            run_id = json.loads(run_in_process("events", str(run), "--format", "json").stdout.splitlines()[0])["run_id"]
            view = history.query(f"SELECT * FROM runs WHERE run_id = '{run_id}'").to_pylist()[0]
            assert (view["pass_op"], view["pass_target"]) == ("<=", TARGET)
            assert view["comparable"] and view["flags"] is None  # its own target is no other target
            passed = history.query(f"SELECT step, value FROM evals WHERE run_id = '{run_id}' AND passed").to_pylist()
            assert [r["step"] for r in passed] == [view["passing_step"]] and all(r["value"] <= TARGET for r in passed)


def test_the_report_and_the_plot_judge_by_the_benchmarks_goal(imported: Path, tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from recorder.history.plot import load_timeline, metric_figure

    run = sorted(p for p in imported.iterdir() if (p / "events").is_dir())[0]
    step = _replayed_step(run)
    page = tmp_path / "report.html"
    done = run_in_process("report", str(run), "-o", str(page))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Converged (as-recorded): step {step}'s checkpoint passes the target (<= 0.925)" in done.stdout
    text = page.read_text()
    best = re.search(r"the best scored (0\.\d+) at step (\d+)", text)
    assert best and float(best.group(1)) <= TARGET and int(best.group(2)) == step  # the lowest loss, not the highest
    assert "target: passes at or below 0.925" in text and "NOT COMPARABLE" not in text
    with open_history(imported) as history:
        run_id = history.query(f"SELECT run_id FROM runs WHERE path = '{run}'").to_pylist()[0]["run_id"]
        timeline = load_timeline(history, run_id)
        assert [s for s, _, _, _, ok in timeline.evals if ok] == [step]
        fig = metric_figure(history, "accuracy")
        labels = [line.get_label() for line in fig.axes[0].lines]
        assert "target (accuracy <= 0.925)" in labels and not any("0.69" in x for x in labels)
        plt.close(fig)
