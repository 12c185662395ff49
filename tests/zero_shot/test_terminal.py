"""`recorder zero-shot` on a real terminal (a pseudo-terminal from `script`) 80 and 40 columns wide: every
checkpoint's name whole, the table in blocks of columns that fit, and progress naming the checkpoints; on a
pipe and in summary.txt the table is one block, and no progress is drawn."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evaluator.zero_shot.task_sources import TASKS
from tests.helpers import on_terminal, plain, run_cli, terminal_recording
from tests.kit.screen import screen

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux `script`"),
]
pytest.importorskip("lm_eval")

RUN = "pretraining-llama-tiny-fsdp2-seed1234-lr3e-3"  # a name as long as teams give their runs


@pytest.fixture
def snapshots(training: Path) -> list[Path]:
    run = training / RUN
    (training / "run").rename(run)
    return [run / "snapshots/step_10", run / "snapshots/step_20"]


@pytest.mark.parametrize("columns", [80, 40])
def test_every_name_whole_and_the_table_in_blocks_that_fit(snapshots: list[Path], hf_cache: Path, columns: int) -> None:
    labels = [f"{RUN}/step_10", f"{RUN}/step_20"]
    out = snapshots[0].parents[2] / "zero-shot results"  # a path with a space: never broken there
    args = ["zero-shot", *map(str, snapshots), "--hf-cache", str(hf_cache), "--limit", "1", "--workers", "1"]
    recording = terminal_recording(columns, *args, "-o", str(out))
    text, shown = plain(recording), screen(recording, columns)
    [first, second] = sorted(out.glob("*/results.json"))
    assert [json.loads(p.read_text())["label"] for p in (first, second)] == labels
    # the progress is gone from the screen, and what replaced it starts its own lines
    assert not [line for line in shown if "━" in line or "zero-shot: " in line and " done" in line], shown
    assert shown[0].startswith("zero-shot: 2 checkpoint(s)"), shown
    assert f"\n{labels[0]}:" in text, text  # a line of its own, not glued to a frame
    for result in (first, second):  # the path whole: beside the word, or alone on the next line
        assert f"wrote {result.parent}\n" in text or f"wrote\n{result.parent}\n" in text, text
    summary = (first.parent / "summary.txt").read_text().splitlines()
    assert summary[0].split() == ["checkpoint", "step", *TASKS, "average", "holdout", "note"]  # the file: one block
    assert [line.split()[0] for line in summary[1:]] == labels
    # what follows the last checkpoint's line (a line of its own; the progress rows that name it start with a
    # spinner)
    table = text[text.rindex(f"\n{labels[1]}:") + 1 :].split("\n", 1)[1]
    for label in labels:
        assert label in table, table
    for task in TASKS:
        assert task in table, table
    rows = [line for line in table.splitlines() if line.split()[:1] in ([labels[0]], [labels[1]])]
    if columns == 80:
        heads = [line for line in table.splitlines() if line.startswith("checkpoint ")]
        assert len(heads) > 1 and len(rows) == 2 * len(heads), table  # blocks, each led by every name
        assert all(len(line) <= columns for line in [*heads, *rows]), table
        assert "/2 done" in text and "loading" in text  # the progress: checkpoints done, what each does
        # too wide beside the name: below the table, broken at a space where it is wider than the terminal
        assert f"note: {labels[0]} - smoke test, test data" in " ".join(table.split()), table
        again = on_terminal(columns, "collect", str(out), "--all")  # smoke tests (--limit) shown, marked
        start = next(i for i, line in enumerate(shown) if line.startswith("checkpoint "))
        end = next(i for i, line in enumerate(shown) if line.startswith("wrote"))
        drawn = [line for line in shown[start:end] if line.strip()]  # the table left on the screen, its notes
        # the same table, but collect, which did not write these results, marks them unsigned (no --trust
        # key) and says what that means under the table
        collected = " ".join(again.split())
        assert ", unsigned" in collected and "unsigned: no key signed it" in collected, again
        collected = collected.split(" unsigned: no key signed it")[0].replace(", unsigned", "")
        assert collected == " ".join(" ".join(drawn).split()), again
    else:  # not even the names fit beside a score: one block of lines per checkpoint
        assert [line for line in rows] == labels, table
        assert f"  {TASKS[0]}: " in table and "  holdout: " in table, table


def test_a_pipe_gets_the_whole_table_and_no_progress(snapshots: list[Path], hf_cache: Path) -> None:
    out = snapshots[0].parents[2] / "results"
    args = ["--hf-cache", str(hf_cache), "--limit", "1", "--tasks", "piqa,arc_easy", "-o", str(out)]
    done = run_cli("zero-shot", *map(str, snapshots), *args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "loading" not in done.stderr and "done" not in done.stderr
    [summary] = {p.read_text() for p in out.glob("*/summary.txt")}
    assert summary in done.stdout and summary.splitlines()[0].split()[2:4] == ["piqa", "arc_easy"]
