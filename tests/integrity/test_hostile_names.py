"""A second attacker: names and text that come from the data.

- `recorder report`: a value from a run (a forged checkpoint sha, a failure reason) that holds
  `</script>`, `<!--<script>` or plotly's own markup is text on the page, never markup: the JSON
  embedded in a <script> element has no `<`, `>` or `&` of the data, and chart hover text is escaped.
- `recorder verify`: each (writer, number) has one file name, so `evaluator-00001.arrows` beside
  `evaluator-0001.arrows` (two segments of one writer and number; a signature does not cover the name)
  fails rule `segment-name`.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from recorder.report.charts import plotly_text
from recorder.report.page import build_report, script_json
from recorder.verify import SEGMENT_NAME_RULE, verify_run
from tests.integrity.forge import rewrite, rows
from tests.kit.synthetic import record_run

HOSTILE = '</script><!--<script>alert(1)//"\'&<img src=x onerror=alert(2)><a href="javascript:alert(3)">x</a>'


def _run(tmp_path: Path) -> Path:
    return record_run(tmp_path, "hostile", gbs=256, steps=20, evals=[(19, 0.72), (18, 0.70)], closed=True).path


def test_json_in_a_script_element_holds_no_character_that_could_close_it() -> None:
    embedded = script_json({"x": HOSTILE, "y": ["</SCRIPT >", "\u2028"]})
    assert not set("<>&") & set(embedded)
    assert json.loads(embedded) == {"x": HOSTILE, "y": ["</SCRIPT >", "\u2028"]}
    assert json.loads(script_json({"v": [1.5, float("inf"), float("nan")]})) == {"v": [1.5, None, None]}


def test_plotly_text_from_the_data_is_escaped() -> None:
    shown = plotly_text(HOSTILE)
    assert "<" not in shown and ">" not in shown and '"' not in shown
    assert plotly_text("worker-1") == "worker-1"


def test_a_forged_sha_with_script_in_it_is_text_on_the_report_page(tmp_path: Path) -> None:
    run = _run(tmp_path)
    segment = run / "events" / "trainer-0001.arrows"

    def poison(events: list[dict[str, object]]) -> list[dict[str, object]]:
        for e in events:
            if e["kind"] == "checkpoint_committed":
                data = dict(e["data"])  # type: ignore[call-overload]
                data["sha256"] = HOSTILE
                e["data"] = data
        return events

    rewrite(segment, poison)
    assert any(e["data"].get("sha256") == HOSTILE for e in rows(segment))
    out = tmp_path / "report.html"
    build_report([run], out)
    page = out.read_text(encoding="utf-8")
    assert "<img src=x" not in page and "<!--<script>" not in page and 'href="javascript:' not in page
    data = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert data is not None and not set("<>&") & set(data.group(1))
    shown = json.dumps(json.loads(data.group(1)))
    assert "&lt;/script&gt;" in shown  # the forged sha reached a chart, escaped for plotly
    assert page.count("</script>") == page.count("<script")  # every element closes where the page closes it


@pytest.mark.parametrize("writer", ["evaluator", "trainer"])
def test_two_spellings_of_one_segment_number_fail_verify(tmp_path: Path, writer: str) -> None:
    run = _run(tmp_path)
    canonical = run / "events" / f"{writer}-0001.arrows"
    shutil.copy(canonical, run / "events" / f"{writer}-00001.arrows")
    report = verify_run(run)
    assert [(p.segment, p.rule) for p in report.problems if p.rule == SEGMENT_NAME_RULE] == [
        (f"{writer}-00001.arrows", SEGMENT_NAME_RULE)
    ]
    canonical.unlink()  # renamed rather than copied: still not a name a writer gives
    assert not verify_run(run).ok
