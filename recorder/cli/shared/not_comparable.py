"""The NOT COMPARABLE line `eval` and `evals` print under their results (recorder.comparability says why)."""

from __future__ import annotations

from recorder.cli.terminal.output import console, label, line


def print_not_comparable(why: str | None, target: float | None) -> None:
    """The NOT COMPARABLE line (recorder.comparability's why), saying what judges passing; nothing when the
    run compares with MLPerf results."""
    from recorder.comparability import NOT_COMPARABLE, with_what_judges

    if why is None:
        return
    console.print(line(label(f"{NOT_COMPARABLE}:", "yellow"), with_what_judges(why, target, "6.1.0")))
