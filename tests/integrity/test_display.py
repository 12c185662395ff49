"""Recorded strings cannot drive the terminal of whoever reads them.

A run id, a benchmark name, a checkpoint path or a task name can hold ANSI escapes (`\\x1b[2J` clears the
screen), NUL, or bidirectional overrides (U+202E shows text reversed). Every command prints through
recorder/cli/terminal/output.py's consoles, which show them as visible escapes.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.table import Table

from recorder.cli.terminal.output import make_console, visible
from tests.helpers import run_cli
from tests.integrity.forge import Row, rewrite

HOSTILE = "qwen\x1b[2J\x1b[31mEVIL\u202eabc\x00\x9b"
SHOWN = "qwen\\x1b[2J\\x1b[31mEVIL\\u202eabc\\x00\\x9b"
CONTROLS = ("\x1b", "\u202e", "\x00", "\x9b")


def test_visible_escapes_controls_and_keeps_tabs_newlines_and_plain_unicode() -> None:
    assert visible(HOSTILE) == SHOWN
    assert visible("a\tb\nc é 日本") == "a\tb\nc é 日本"


def test_a_table_cell_is_escaped_before_it_is_measured() -> None:
    out = io.StringIO()
    table = Table("benchmark")
    table.add_row(HOSTILE)
    make_console(file=out).print(table)
    text = out.getvalue()
    assert not any(c in text for c in CONTROLS), repr(text)
    assert f"│ {SHOWN} │" in text  # whole: the cell was sized for what is shown


def test_runs_and_events_show_a_hostile_benchmark_name_as_escapes(attacked: Path) -> None:
    def rename(events: list[Row]) -> list[Row]:
        opened = next(e for e in events if e["kind"] == "run_opened")
        opened["data"] = {**opened["data"], "benchmark": HOSTILE}
        return events

    rewrite(attacked / "events" / "trainer-0001.arrows", rename)
    for args in (("runs", "--root", str(attacked.parent)), ("events", str(attacked), "--kind", "run_opened")):
        done = run_cli(*args)
        assert "Traceback" not in done.stderr, done.stderr
        assert not any(c in done.stdout + done.stderr for c in CONTROLS), repr(done.stdout)
        assert "[2J" in done.stdout and "EVIL" in done.stdout, (args, done.stdout)  # shown, as an escape
