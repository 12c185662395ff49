"""`recorder report`: one self-contained HTML page for a run or a set of runs, for a reviewer to open.

The page holds everything: the facts (report.facts), the words (report.story), the chart specs
(report.charts) and plotly.js itself, inlined. It loads nothing, so it opens offline from an attachment.
Scores, checker verdicts and the mllog come from the files replay derives; this module formats them.
"""

from __future__ import annotations

import html
import importlib.util
import json
import math
import re
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

import pyarrow.compute as pc

from recorder.errors import InputError
from recorder.output import write_output
from recorder.report.charts import accuracy_by_step, reward_by_step, timeline
from recorder.report.long_series import MAX_ROWS, MIN_NS, capped, end_ns
from recorder.report.mllog_excerpt import HEAD, TAIL
from recorder.report.page_data import VERIFIED_AT_COMPACTION, RunFacts, attach_rcp, gather, read_views
from recorder.report.plotly_bundle import encoded
from recorder.report.sets import set_section
from recorder.report.story import what_happened


class ReportError(InputError):
    """A report that cannot be built: no run given, or plotly.js is not installed."""


@cache
def plotly_gz() -> str:
    """plotly.min.js from the `plotly` package, gzip-compressed and base64-encoded for inlining."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise ReportError("recorder report needs plotly (its JavaScript is inlined): pip install 'recorder[report]'")
    return encoded(Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js")


def e(value: object) -> str:
    return html.escape("" if value is None else str(value))


# Characters that could end, or change the parsing of, a <script> element's text ("</script>", "<!--", a
# "<script" that makes the real closing tag part of the data); JSON reads each escape back as itself.
_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinity as None: a chart leaves a gap, and the page stays valid JSON (a
    forged or imported value can be anything)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def script_json(value: Any) -> str:
    """`value` as JSON safe to place inside a <script> element: no character of the data can close it, and
    no number that JSON cannot hold."""
    text = json.dumps(_finite(value), separators=(",", ":"), allow_nan=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_UNSAFE[m.group()], text)


def table(columns: list[str], rows: list[list[Any]], numeric: set[str] | None = None, cls: str = "") -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{e(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=num' if c in numeric else ''}>{e(v)}</td>" for c, v in zip(columns, r, strict=True))
        + "</tr>"
        for r in rows
    )
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _min(ns: int | None, t0: int) -> str:
    return "-" if ns is None else f"{(ns - t0) / MIN_NS:.3f}"


def _t0(f: RunFacts) -> int:
    start = f.facts.get("run_start_ns") or next((r["run_start_ns"] for r in f.scores if r["run_start_ns"]), None)
    first = pc.min(end_ns(f.steps)).as_py()
    return int(start or first or 0)


def badges(f: RunFacts) -> str:
    out = []
    if f.verify_problems:
        out.append('<span class="badge">UNVERIFIED</span>')
    if f.resumed:
        out.append('<span class="badge warn">RESUMED</span>')
    if f.not_comparable or f.other_evaluation:
        out.append('<span class="badge warn">NOT COMPARABLE</span>')
    if f.open_segments:
        out.append('<span class="badge warn">LIVE</span>')
    if f.imported_from:
        out.append('<span class="badge warn" style="background:#555">IMPORTED</span>')
    return "".join(out)


def _verdict(label: str, value: str, cls: str = "") -> str:
    return f'<div class="verdict"><b>{e(label)}</b><span class="{e(cls)}">{e(value)}</span></div>'


def verdicts(f: RunFacts) -> str:
    row = f.headline or {}
    checker = row.get("checker")
    compliance = "PASSED" if checker and checker.endswith("PASSED") else ("FAILED" if checker else "not run")
    minutes = row.get("minutes")
    rcp = "not run" if f.rcp_ok is None else ("PASSED" if f.rcp_ok else "FAILED")
    verify = "intact" if not f.verify_problems else f"FAILED ({len(f.verify_problems)} problems)"
    if VERIFIED_AT_COMPACTION in f.verify_warnings:
        verify = "intact (at compaction)"
    cells = [
        _verdict(f"status ({f.mllog_name})", row.get("status", "-"), row.get("status", "")),
        _verdict("minutes (run_start to run_stop)", "-" if minutes is None else f"{minutes:.3f}"),
        _verdict("passing step", str(row.get("passing_step") or "-")),
        _verdict(f"compliance checker, training {row.get('ruleset', '')}", compliance, compliance),
        _verdict("RCP checker", rcp, rcp),
        _verdict("mlperf-logging", row.get("mlperf_logging_version") or "-"),
        _verdict(
            "recorder verify",
            "UNVERIFIED" if f.verify_problems else verify,
            "UNVERIFIED" if f.verify_problems else verify,
        ),
        _verdict(
            "run",
            ", ".join(
                [str(f.facts.get("benchmark") or "-"), str(f.facts.get("division") or "-")]
                + [f"GBS {f.facts.get('global_batch_size') or '-'}"]
            ),
        ),
    ]
    reasons = [p for p in (checker, f.rcp_summary) if p and not p.endswith("PASSED")]
    notes = "".join(_reasons(r) for r in reasons)
    notes += "".join(f'<p class="note">{e(r)}</p>' for r in [*f.verify_problems[:5], *f.verify_warnings[:5]])
    return f'<div class="verdicts">{"".join(cells)}</div>{notes}'


def _reasons(summary: str, keep: int = 3) -> str:
    """A checker's verdict with its first reasons; all of them one click away."""
    head, _, rest = summary.partition(": FAILED: ")
    parts = rest.split("; ") if rest else []
    if len(parts) <= keep:
        return f'<p class="note">{e(summary)}</p>'
    shown = f"{head}: FAILED: {'; '.join(parts[:keep])}; ... and {len(parts) - keep} more"
    return f'<details class="note"><summary>{e(shown)}</summary><p>{e("; ".join(parts))}</p></details>'


def interpretations(f: RunFacts) -> str:
    from replay.compare import COLUMNS, compare_table

    if not f.scores:
        return '<p class="note">no scores</p>'
    t = compare_table(f.scores)
    out = [
        f"<p>{e(t.title)}</p>",
        table(list(COLUMNS), [list(r) for r in t.rows], {"step", "stop_s", "minutes", "delta"}, "interpretations"),
    ]
    out += [f'<p class="note">{e(line)}</p>' for line in [t.legend, *t.notes]]
    return "".join(out)


def _shown(count: int, total: int) -> str:
    if count == total:
        return ""
    return f'<p class="note">{count:,} of {total:,} shown (the evaluated ones first); `recorder query` has all</p>'


def checkpoints(f: RunFacts, t0: int) -> str:
    if not f.checkpoints.num_rows:
        return '<p class="note">no checkpoint committed</p>'
    rows, total = capped(f.checkpoints, [e["step"] for e in f.evals])
    note = _shown(len(rows), total)
    cols = [
        "step",
        "sha256",
        "bytes",
        "weight update (min)",
        "save begin (min)",
        "save end (min)",
        "blocked (s)",
        "background (s)",
    ]
    body = [
        [
            c["step"],
            c["sha256"] or "-",
            c["bytes"],
            _min(c["weight_update_ns"], t0),
            _min(c["save_begin_ns"], t0),
            _min(c["save_end_ns"], t0),
            _num(c["blocked_s"]),
            _num(c["background_s"]),
        ]
        for c in rows
    ]
    return (
        table(
            cols,
            body,
            {
                "step",
                "bytes",
                "weight update (min)",
                "save begin (min)",
                "save end (min)",
                "blocked (s)",
                "background (s)",
            },
        )
        + note
    )


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def evaluations(f: RunFacts, t0: int) -> str:
    if not f.evals:
        return '<p class="note">no evaluation recorded</p>'
    rows, note = f.evals[:MAX_ROWS], _shown(min(len(f.evals), MAX_ROWS), len(f.evals))
    cols = [
        "order",
        "step",
        "accuracy",
        "target",
        "passed",
        "metric",
        "worker",
        "start (min)",
        "stop (min)",
        "duration (s)",
        "writer",
    ]
    body = [
        [
            r["eval_order"],
            r["step"],
            _num(r["value"], 4) if r["status"] == "ok" else f"failed: {r['reason']}",
            r["target"],
            "-" if r["passed"] is None else ("yes" if r["passed"] else "no"),
            r["metric"] or "-",
            r["worker"] or "-",
            _min(r["start_ns"], t0),
            _min(r["stop_ns"] or r["result_ns"], t0),
            _num(r["eval_s"]),
            r["writer"],
        ]
        for r in rows
    ]
    return table(cols, body, {"order", "step", "accuracy", "start (min)", "stop (min)", "duration (s)"}) + note


def mllog(f: RunFacts, i: int) -> str:
    if f.mllog is None:
        return f'<p class="note">no {e(f.mllog_name)} mllog: {e(f.mllog_why)}</p>'
    what = f"{f.mllog.lines:,} lines, {f.mllog.size / 1e6:.2f} MB"
    if not f.mllog.whole:
        what += f"; too large to embed whole: the first {HEAD:,} and last {TAIL:,} lines"
    name = f.mllog_path.name if f.mllog_path else "result.txt"
    return (
        f"<details><summary>Derived mllog ({e(f.mllog_name)}): {e(what)}</summary>"
        f'<p><a download="{e(f.run_id)}_{e(name)}" data-mllog="mllog-{i}">download</a> '
        f'<span class="note">written to {e(f.mllog_path)}</span></p>'
        f'<pre id="mllog-{i}">{e(f.mllog.text)}</pre></details>'
    )


def provenance(f: RunFacts) -> str:
    items = f.provenance or {}
    if not items:
        return ""
    rows = [[k, json.dumps(v) if not isinstance(v, str) else v] for k, v in sorted(items.items())]
    return "<h3>Provenance</h3>" + table(["key", "value"], rows)


def _sentence(text: str) -> str:
    """A story sentence; a mark in capitals before its colon (UNVERIFIED:, RESUMED:) stands out."""
    mark, colon, rest = text.partition(":")
    if colon and mark.isupper():
        return f'<span class="mark">{e(mark)}:</span>{e(rest)}'
    return e(text)


def run_section(f: RunFacts, i: int, charts: dict[str, Any], several: bool) -> str:
    """One run's section: story, verdicts, timeline, tables, charts, mllog."""
    t0 = _t0(f)
    status = (f.headline or {}).get("status", "none")
    story = "".join(f"<p>{_sentence(s)}</p>" for s in what_happened(f))
    fig, thinned = timeline(f, t0)
    charts[f"timeline-{i}"] = fig
    charts[f"accuracy-{i}"] = accuracy_by_step([f])
    reward, reward_notes = reward_by_step([f])
    charts[f"reward-{i}"] = reward
    h = "h2" if several else "h1"
    notes = "".join(f'<p class="note">{e(n)}</p>' for n in [*thinned, *reward_notes])
    return (
        f'<section id="run-{i}" data-run="{e(f.run_id)}"><{h}>{badges(f)}run {e(f.run_id)}</{h}>'
        f'<p class="note">{e(f.run.path)}</p><div class="story {e(status)}">{story}</div>{verdicts(f)}'
        f'<h3>Timeline</h3><p class="note">Hover an item for its facts; drag to zoom, double-click to reset.</p>'
        f'<div class="chart timeline" id="timeline-{i}"></div>{notes}'
        f"<h3>Interpretations (as <code>recorder replay --compare</code> prints them)</h3>{interpretations(f)}"
        f"<h3>Checkpoints</h3>{checkpoints(f, t0)}<h3>Evaluations</h3>{evaluations(f, t0)}"
        f'<h3>Accuracy by step</h3><div class="chart" id="accuracy-{i}"></div>'
        f'<h3>Reward by step</h3><div class="chart" id="reward-{i}"></div>'
        f"{provenance(f)}<h3>The mllog</h3>{mllog(f, i)}</section>"
    )


def build_report(run_dirs: list[Path], out: Path, ruleset: str | None = None) -> list[RunFacts]:
    """Write the page for `run_dirs` to `out`; returns the facts it showed."""
    from recorder.history.views import open_runs
    from recorder.store.run import RunDir
    from replay.rulesets import get_known
    from replay.scorekeeping.scores_check import RecheckBudget

    if not run_dirs:
        raise ReportError("give at least one run directory")
    flag = get_known(ruleset) if ruleset is not None else None  # looked up once, for every run
    budget = RecheckBudget()  # one budget for the page, as `recorder runs` has one for its table
    runs = [gather(Path(d), flag, budget) for d in run_dirs]
    with open_runs(runs[0].run.path.parent, [f.run for f in runs]) as history:
        for f in runs:
            read_views(history, f)
    for f in runs:
        attach_rcp(f)
    assert all(isinstance(f.run, RunDir) for f in runs)
    charts: dict[str, Any] = {}
    several = len(runs) > 1
    body = set_section(runs, charts, ruleset) if several else ""
    body += "".join(run_section(f, i, charts, several) for i, f in enumerate(runs))
    title = f"recorder report: {runs[0].run_id}" if not several else f"recorder report: {len(runs)} runs"
    data = script_json({"charts": charts})
    template = Template((Path(__file__).with_name("template.html")).read_text(encoding="utf-8"))
    page = template.substitute(title=e(title), body=body, data=data, plotly_gz=plotly_gz())
    out.parent.mkdir(parents=True, exist_ok=True)
    write_output(out, page)  # never through a symlink planted at -o
    return runs
