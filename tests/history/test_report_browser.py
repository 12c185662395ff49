"""`recorder report` in a real browser: Debian's chromium, headless, driven by Playwright (never a browser
Playwright downloads). The page must load offline with no console error and no request, draw its
timeline and charts, show a checkpoint's weight-update time on hover, and show the interpretations'
minutes exactly as `recorder replay --compare` prints them. The screenshots are kept as artifacts."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_cli
from tests.history import report_runs

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("RECORDER_ARTIFACTS", REPO / "build" / "artifacts"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
RCP_LOG = "qwen35_397b_grpo_rcp/GBS512/seed_1.out"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install 'recorder[report]'")
    if not Path(CHROMIUM).exists():
        pytest.skip("no chromium: `apt-get install chromium` (.ci/setup does)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


class Opened:
    """A report open in a page, with everything the page said and asked for."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1300, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_function("document.body.dataset.ready", timeout=60_000)
        self.url = path.as_uri()

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        out = ARTIFACTS / name
        self.page.screenshot(path=str(out), full_page=True)
        return out


def _drawn(page: Any, chart: str) -> dict[str, int]:
    """What plotly put into a chart's SVG: its size, and how many bars and markers."""
    return page.evaluate(
        """(id) => { const d = document.getElementById(id); const svg = d.querySelector("svg.main-svg");
        const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
        return {width: Math.round(box.width), height: Math.round(box.height),
                bars: d.querySelectorAll(".barlayer .point path").length,
                points: d.querySelectorAll(".scatterlayer .point").length,
                lines: d.querySelectorAll(".scatterlayer .js-line").length}; }""",
        chart,
    )


def _hover_checkpoint(page: Any, step: int) -> str:
    """Move the mouse onto step's 'checkpoint committed' marker; the hover label's text."""
    where = page.evaluate(
        """(step) => { const gd = document.getElementById("timeline-0");
        const i = gd.data.findIndex((t) => t.name === "checkpoint committed");
        const k = gd.data[i].hovertext.findIndex((h) => h.includes(`checkpoint step ${step}<`));
        const L = gd._fullLayout, box = gd.getBoundingClientRect();
        return {x: box.left + L._size.l + L.xaxis.d2p(gd.data[i].x[k]),
                y: box.top + L._size.t + L.yaxis.d2p(gd.data[i].y[k])}; }""",
        step,
    )
    page.mouse.move(where["x"], where["y"])
    label = page.wait_for_selector("#timeline-0 .hoverlayer .hovertext", timeout=10_000)
    return str(label.text_content())


def _overflowing_tables(page: Any) -> list[str]:
    """The tables (by their first heading) whose right edge passes the body's content box."""
    return list(
        page.evaluate(
            """() => { const body = document.body.getBoundingClientRect();
            const pad = parseFloat(getComputedStyle(document.body).paddingRight);
            return [...document.querySelectorAll("table")]
              .filter((t) => t.getBoundingClientRect().right > body.right - pad + 0.5)
              .map((t) => t.querySelector("th").textContent); }"""
        )
    )


def _compare_minutes(run: Path) -> dict[str, str]:
    r = run_cli("replay", str(run), "--compare")
    assert r.returncode == 0, r.stderr
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in r.stdout.splitlines() if line.startswith("│")]
    return {row[0]: row[4] for row in rows if row and row[0] != "interpretation"}


def test_the_report_in_chromium(browser: Any, tmp_path: Path) -> None:
    run = report_runs.converged(tmp_path).path
    out = tmp_path / "converged.html"
    assert run_cli("report", str(run), "-o", str(out)).returncode == 0
    opened = Opened(browser, out)
    page = opened.page
    assert opened.errors == []
    assert set(opened.requests) == {opened.url}  # the page itself, and nothing else
    timeline = _drawn(page, "timeline-0")
    assert timeline["width"] > 0 and timeline["height"] > 0
    assert timeline["bars"] >= 20 + 3 * 2 + 3  # steps, both parts of each save, evaluations
    assert _drawn(page, "accuracy-0")["points"] == 3 and _drawn(page, "reward-0")["lines"] == 1
    # the zoom is onto the scored region: from the first save (18 min) to the latest run_stop (include-final-save,
    # 19.533 min); the offline evaluations that follow (21.667 to 24.667 min) are not scored
    lo, hi = page.evaluate("document.getElementById('timeline-0')._fullLayout.xaxis.range")
    assert 17.8 < lo < 18 and 19.533 < hi < 19.7
    label = _hover_checkpoint(page, 19)
    assert "checkpoint step 19" in label and "weight update: 19.033 min (1142.000 s after run_start)" in label
    shown = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll("table.interpretations tbody tr")]
        .map((tr) => [tr.cells[0].textContent, tr.cells[4].textContent]))"""
    )
    assert shown == _compare_minutes(run) and shown["official"] == "19.033"
    assert _overflowing_tables(page) == []  # every table fits the page's 1280 px column
    assert opened.shot("report_converged.png").stat().st_size > 10_000
    page.close()


@pytest.mark.slow  # a second page load: ~25 s on the shared machine; the first test covers the contract
def test_an_imported_reference_log_in_chromium(browser: Any, corpus: Path, tmp_path: Path) -> None:
    assert run_cli("import", str(corpus / RCP_LOG), "--root", str(tmp_path), "--run-id", "seed1").returncode == 0
    out = tmp_path / "imported.html"
    assert run_cli("report", str(tmp_path / "seed1"), "-o", str(out)).returncode == 0
    opened = Opened(browser, out)
    assert opened.errors == [] and set(opened.requests) == {opened.url}
    assert _drawn(opened.page, "timeline-0")["bars"] > 0 and _drawn(opened.page, "accuracy-0")["points"] > 0
    href = opened.page.get_attribute("a[data-mllog]", "href")
    assert href is not None and href.startswith("data:text/plain") and re.search(r"submission_benchmark", href)
    assert opened.shot("report_imported.png").stat().st_size > 10_000
    opened.page.close()


@pytest.mark.slow  # a third page load; the default tier checks the worked example's tables
def test_a_run_with_real_checkpoint_hashes_fits_the_page(browser: Any, tmp_path: Path) -> None:
    from tests.evaluator.synth import record_run

    run = record_run(tmp_path / "runs", steps=20, samples=2).path  # 64-digit sha256 per checkpoint
    out = tmp_path / "hashes.html"
    assert run_cli("report", str(run), "-o", str(out)).returncode == 0
    opened = Opened(browser, out)
    assert opened.errors == [] and _overflowing_tables(opened.page) == []
    opened.page.close()
