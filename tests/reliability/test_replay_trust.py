"""Replay and a run it cannot trust: a tampered run is refused unless --force, and the forced output is
marked where nobody misses it; a wall clock stepping backwards is warned about with seq and size."""

import json
import time
from pathlib import Path

from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from replay.checkers.preflight import clock_steps
from tests.cli.shell import run_main
from tests.kit.synthetic import record_run


def _evaluated_run(root: Path, run_id: str = "r") -> Path:
    return record_run(root, run_id, gbs=256, steps=20, evals=[(19, 0.72), (18, 0.70)]).path


def _tamper_a_value(run: Path) -> None:
    """Change one digit of a recorded accuracy: the segment still parses, its digest chain breaks."""
    seg = next(p for p in (run / "events").iterdir() if p.name.startswith("evaluator"))
    raw = seg.read_bytes()
    at = raw.index(b"0.72")
    seg.write_bytes(raw[:at] + b"0.92" + raw[at + 4 :])


def test_intact_run_replays_unmarked(tmp_path):
    run = _evaluated_run(tmp_path)
    r = run_main("replay", str(run))
    assert r.code == 0, r.err
    assert "UNVERIFIED" not in r.out and (run / "derived" / "result_official.txt").exists()


def test_tampered_run_is_refused(tmp_path):
    run = _evaluated_run(tmp_path)
    _tamper_a_value(run)
    assert read_run(run).events  # still readable: only verification can tell
    r = run_main("replay", str(run))
    assert r.code == 1 and "fails verification" in r.err and "--force" in r.err
    assert "evaluator-0001.arrows seq" in r.err and "Traceback" not in r.err
    assert not (run / "derived").exists() or not list((run / "derived").glob("result_*"))


def test_forced_replay_is_marked_everywhere(tmp_path):
    run = _evaluated_run(tmp_path)
    _tamper_a_value(run)
    r = run_main("replay", str(run), "--force")
    assert r.code == 0, r.err
    assert r.out.startswith("UNVERIFIED:")
    derived = run / "derived"
    assert (derived / "result_official.UNVERIFIED.txt").exists() and not (derived / "result_official.txt").exists()
    assert not list(derived.glob("*.txt.UNVERIFIED"))  # the default name carries the mark itself
    rows = [json.loads(line) for line in (derived / "scores.jsonl").read_text().splitlines()]
    assert rows and all(row["verified"] is False and row["why"].startswith("UNVERIFIED") for row in rows)
    # the history leaves a run that fails verification out, and says so
    q = run_main("query", "--root", str(tmp_path), "SELECT count(*) AS n FROM scores", "--format", "csv")
    assert q.code == 0 and q.out.split()[-1] == "0" and "left out of the history" in " ".join(q.err.split())
    # a chosen output name gets a sidecar
    out = tmp_path / "mine.txt"
    r = run_main("replay", str(run), "--force", "-o", str(out))
    assert r.code == 0 and out.exists() and (tmp_path / "mine.txt.UNVERIFIED").exists()
    # and --compare marks every verdict
    r = run_main("replay", str(run), "--force", "--compare")
    assert r.code == 0 and "UNVERIFIED: every row above" in " ".join(r.out.split()), r.out


def test_wall_clock_stepping_back_is_warned_with_seq_and_size(tmp_path):
    """A real LogWriter whose clock jumps back one hour mid-run: the events keep their order (mono_ns)."""
    run = RunDir.create(tmp_path, "clock")
    now = [time.time_ns()]

    def clock() -> int:
        now[0] += 1_000_000
        return now[0]

    with LogWriter(run, "trainer", clock=clock) as w:
        for step in range(1, 6):
            w.append("step_metrics", step=step, samples_count=step, data={"loss": 1.0})
        now[0] -= 3600 * 10**9  # NTP (or a person) sets the clock back an hour
        for step in range(6, 10):
            w.append("step_metrics", step=step, samples_count=step, data={"loss": 1.0})
    events = read_run(run.path).events
    steps = clock_steps(events)
    assert len(steps) == 1 and steps[0].seq == 5 and abs(steps[0].back_ns - (3600 * 10**9 - 10**6)) < 10**6
    mono = [e.mono_ns for e in sorted(events, key=lambda e: e.seq)]
    assert mono == sorted(mono)  # mono_ns shows the real order
    r = run_main("replay", str(run.path))
    assert "seq 5: the wall clock stepped back 3599.999 s" in r.out.replace("\n", " ")
    assert "Traceback" not in r.err


def test_synthetic_out_of_order_stamps_are_not_clock_steps(tmp_path):
    run = _evaluated_run(tmp_path)  # async commits stamped 30 s later than the loop's next events
    assert clock_steps(read_run(run).events) == []


def test_score_refuses_a_tampered_run_unless_forced(tmp_path):
    good, bad = _evaluated_run(tmp_path, "good"), _evaluated_run(tmp_path, "bad")
    _tamper_a_value(bad)
    r = run_main("score", str(good), str(bad))
    assert r.code == 1 and "fails verification" in r.err and "Traceback" not in r.err
    assert not (good / "derived" / "scores.jsonl").exists()  # refused before anything was written
    r = run_main("score", str(good), str(bad), "--force")
    assert "bad (UNVERIFIED)" in " ".join(r.out.split()) and "Traceback" not in r.err, r.out + r.err
