"""An imported log's line that no logger writes (megabytes long) is refused before
anything is recorded; each byte of it would cost about fifteen in verify, replay and the history."""

from __future__ import annotations

import json
from pathlib import Path

from recorder.adapters.mllog_import import MAX_LINE_BYTES
from tests.helpers import run_cli


def _record(key: str, value: object, time_ms: int) -> str:
    doc = {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key, "value": value}
    return ":::MLLOG " + json.dumps({**doc, "metadata": {"file": "train.py", "lineno": 1}}) + "\n"


def test_an_mllog_line_over_the_limit_is_refused_naming_its_line(tmp_path: Path) -> None:
    log = tmp_path / "result_0.txt"
    huge = "x" * MAX_LINE_BYTES
    log.write_text(
        _record("cache_clear", True, 1_773_021_786_649) + _record("submission_benchmark", huge, 1_773_021_786_650)
    )
    done = run_cli("import", str(log), "--root", str(tmp_path / "root"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{log} line 2: a ':::MLLOG' line of " in done.stderr and "nothing imported" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "root").exists()


def test_a_long_line_that_is_not_a_record_is_skipped_as_before(tmp_path: Path) -> None:
    log = tmp_path / "result_0.txt"
    log.write_text("chatter " + "y" * MAX_LINE_BYTES + "\n" + _record("cache_clear", True, 1_773_021_786_649))
    done = run_cli("import", str(log), "--root", str(tmp_path / "root"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 mllog lines" in done.stdout
