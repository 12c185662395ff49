"""Each view's rows against expectations computed by hand from the events (docs/design.md section 5) and from
the raw text of the imported reference log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorder.history.views import History, open_history
from tests.history.conftest import RCP_LOG, T0, WORKED_SCORES

S = 1_000_000_000
IMPORTED = "rcp-gbs256-seed1"


@pytest.fixture(scope="module")
def history(history_root: Path) -> History:
    h = open_history(history_root)
    yield h
    h.close()


def rows(history: History, sql: str) -> list[dict]:
    return history.query(sql).to_pylist()


def mllog(corpus: Path) -> list[dict]:
    lines = (corpus / RCP_LOG).read_text().splitlines()
    return [json.loads(line.split(":::MLLOG", 1)[1]) for line in lines if ":::MLLOG" in line]


def test_damaged_run_is_named_and_left_out(history: History) -> None:
    assert [r.run_id for r in history.runs] == ["live", IMPORTED, "worked"]
    assert len(history.problems) == 1 and "damaged" in history.problems[0]


def test_runs_view(history: History) -> None:
    got = {r["run_id"]: r for r in rows(history, "SELECT * FROM runs")}
    assert set(got) == {"live", IMPORTED, "worked"}
    worked = got["worked"]
    # trainer: 5 opening events, 20 weight updates, 20 step metrics, 3 checkpoints, block_stop, train_stop,
    # segment_closed = 51; evaluator: 3 x (start, result, stop) + segment_closed = 10.
    assert {
        k: worked[k]
        for k in (
            "benchmark",
            "division",
            "global_batch_size",
            "steps",
            "train_status",
            "status",
            "passing_step",
            "scored_as",
            "origin",
            "events",
            "segments",
            "open_segments",
            "run_start_ns",
        )
    } == {
        "benchmark": "qwen35_397b_grpo",
        "division": "open",
        "global_batch_size": 256,
        "steps": 20,
        "train_status": "completed",
        "status": "success",
        "passing_step": 19,
        "scored_as": "official",
        "origin": "recorded",
        "events": 61,
        "segments": 2,
        "open_segments": 0,
        "run_start_ns": T0,
    }
    assert worked["minutes"] == pytest.approx(19.033)
    live = got["live"]
    assert (live["events"], live["open_segments"], live["status"], live["minutes"]) == (52, 1, None, None)
    imported = got[IMPORTED]
    assert (imported["origin"], imported["division"], imported["global_batch_size"], imported["steps"]) == (
        "imported",
        "closed",
        256,
        18,
    )
    assert (imported["status"], imported["passing_step"], imported["scored_as"]) == ("success", 18, "as-recorded")
    assert imported["minutes"] == pytest.approx((1784868623649 - 1784858974079) / 60000, abs=1e-3)


def test_steps_view_worked(history: History) -> None:
    got = rows(history, "SELECT * FROM steps WHERE run_id = 'worked' ORDER BY step")
    assert [r["step"] for r in got] == list(range(1, 21))
    for r in got:
        s = r["step"]
        blocked = 2 * max(0, s - 18)  # saves of steps 18.. each block the loop for 2 s
        assert r["weight_update_ns"] == T0 + (60 * s + blocked) * S
        assert r["metrics_ns"] == r["weight_update_ns"] + 2 * S
        assert (r["samples_count"], r["reward"], r["checkpoint_block_s"]) == (256 * s, 0.5, 2.0 if s >= 18 else 0.0)


def test_steps_view_imported_matches_log_text(history: History, corpus: Path) -> None:
    want = {}
    for obj in mllog(corpus):
        if obj["key"] == "tracked_stats" and "reward" in obj["value"]:
            want[obj["metadata"]["step"]] = (obj["value"]["reward"], obj["value"]["reduced_train_loss"])
    got = rows(history, f"SELECT step, reward, loss, step_s FROM steps WHERE run_id = '{IMPORTED}' ORDER BY step")
    assert {r["step"]: (r["reward"], r["loss"]) for r in got} == want
    assert got[0]["step_s"] == pytest.approx(471.2140495249769)


def test_checkpoints_view(history: History) -> None:
    got = rows(history, "SELECT * FROM checkpoints WHERE run_id = 'worked' ORDER BY step")
    assert [(r["step"], (r["weight_update_ns"] - T0) // S, (r["committed_ns"] - T0) // S) for r in got] == [
        (18, 1080, 1110),
        (19, 1142, 1172),
        (20, 1204, 1234),
    ]
    assert {(r["blocked_s"], r["save_s"], r["background_s"]) for r in got} == {(2.0, 30.0, 28.0)}
    assert rows(history, f"SELECT count(*) AS n FROM checkpoints WHERE run_id = '{IMPORTED}'") == [{"n": 0}]


def test_evals_view_order_and_intervals(history: History) -> None:
    got = rows(history, "SELECT * FROM evals WHERE run_id = 'worked' ORDER BY eval_order")
    assert [(r["eval_order"], r["step"], r["value"], r["passed"]) for r in got] == [
        (1, 19, 0.72, True),
        (2, 18, 0.70, True),
        (3, 20, 0.71, True),
    ]
    assert [((r["start_ns"] - T0) // S, (r["stop_ns"] - T0) // S, r["eval_s"]) for r in got] == [
        (1300, 1360, 60.0),
        (1360, 1420, 60.0),
        (1420, 1480, 60.0),
    ]
    assert {(r["key"], r["target"], r["worker"], r["status"]) for r in got} == {("accuracy", 0.69, "w0", "ok")}
    # the live run's evaluation started but has no result yet: no row
    assert rows(history, "SELECT count(*) AS n FROM evals WHERE run_id = 'live'") == [{"n": 0}]


def test_evals_view_imported(history: History, corpus: Path) -> None:
    lines = {obj["key"]: obj for obj in mllog(corpus)}
    (got,) = rows(history, f"SELECT * FROM evals WHERE run_id = '{IMPORTED}'")
    assert (got["step"], got["value"], got["target"], got["passed"]) == (18, 0.71875, 0.69, True)  # 4608 / 256
    assert got["start_ns"] == lines["eval_start"]["time_ms"] * 1_000_000
    assert got["result_ns"] == lines["eval_accuracy"]["time_ms"] * 1_000_000
    assert got["stop_ns"] == lines["eval_stop"]["time_ms"] * 1_000_000


def test_scores_view(history: History) -> None:
    got = rows(
        history,
        "SELECT interpretation, passing_step, run_stop_ns, minutes FROM scores "
        "WHERE run_id = 'worked' ORDER BY interpretation",
    )
    want = sorted(WORKED_SCORES)
    assert [(r["interpretation"], r["passing_step"], (r["run_stop_ns"] - T0) // S) for r in got] == [
        (n, step, stop) for n, step, stop, _ in want
    ]
    assert [r["minutes"] for r in got] == pytest.approx([m for *_, m in want])


def test_events_view_counts_by_kind(history: History, corpus: Path) -> None:
    got = {
        (r["run_id"], r["kind"]): r["n"]
        for r in rows(history, "SELECT run_id, kind, count(*) AS n FROM events GROUP BY ALL")
    }
    assert got[("worked", "weight_update")] == 20
    assert got[("worked", "eval_result")] == 3
    assert got[("worked", "segment_closed")] == 2
    assert got[("live", "eval_start")] == 1
    assert got[(IMPORTED, "mllog_line")] == len(mllog(corpus))


def test_a_query_can_join_views(history: History) -> None:
    # time from run_start to the weight update of the first passing checkpoint, in evaluation order
    got = rows(
        history,
        """
        SELECT r.run_id, (c.weight_update_ns - r.run_start_ns) / 60e9 AS minutes
        FROM runs r JOIN (SELECT run_id, arg_min(step, eval_order) AS step FROM evals WHERE passed GROUP BY run_id) p
          USING (run_id) JOIN checkpoints c USING (run_id, step)""",
    )
    assert got == [{"run_id": "worked", "minutes": pytest.approx(1142 / 60)}]
