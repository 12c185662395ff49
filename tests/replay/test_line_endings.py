"""A log with CR-only line endings (old Mac tools, some consoles), or a mix of CR, LF and CRLF, imports line by
line as mlperf-logging's parser reads it (universal newlines), and as-recorded gives every mllog line back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recorder.adapters.mllog_import import import_file
from recorder.store.reader import read_run
from replay.derive import derive_run

LORA = "mlperf-results/training_results_v5.1/Wiwynn/results/1xKinabalux18x4GB200/llama2_70b_lora/result_0.txt"


def _lines(text: str) -> list[str]:
    return [x for x in re.split(r"\r\n|\r|\n", text) if ":::MLLOG" in x]


@pytest.mark.parametrize("ending", ["\r", "mixed"])
def test_cr_line_endings_round_trip(corpus: Path, tmp_path: Path, ending: str) -> None:
    original = (corpus / LORA).read_bytes().decode("utf-8").replace("\r\n", "\n").split("\n")
    if ending == "mixed":
        text = "".join(x + ("\r", "\n", "\r\n")[i % 3] for i, x in enumerate(original))
    else:
        text = "\r".join(original)
    path = tmp_path / "result_0.txt"
    path.write_bytes(text.encode("utf-8"))
    report = import_file(path, tmp_path / "runs")
    assert report.lines == len(_lines(text)) == 136 and not report.malformed
    derived = derive_run(read_run(report.run).events, "6.1.0", "as-recorded")
    assert list(derived.lines) == _lines(text)
    assert derived.passing_step == 430 and derived.status == "success"
