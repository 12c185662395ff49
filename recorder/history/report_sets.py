"""The part of `recorder report` about a set of runs: the olympic score per global batch size, the runs
table, and every run's curves overlaid. The score is mlperf-logging's (replay.olympic), the RCP verdict its
RCP checker's over the group's derived mllogs (replay.check.rcp)."""

from __future__ import annotations

import html
from collections import defaultdict
from typing import Any

from recorder.history.report_charts import accuracy_by_step, reward_by_step, style
from recorder.history.report_facts import RunFacts


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _marks(f: RunFacts) -> str:
    marks = (
        (["UNVERIFIED"] if f.verify_problems else [])
        + (["RESUMED"] if f.resumed else [])
        + (["NOT COMPARABLE"] if f.not_comparable else [])
        + (["LIVE"] if f.open_segments else [])
    )
    return ", ".join(marks) or "-"


def _compliance(f: RunFacts) -> str:
    checker = (f.headline or {}).get("checker")
    return "PASSED" if checker and checker.endswith("PASSED") else ("FAILED" if checker else "not run")


def _group_score(group: list[RunFacts], ruleset: str) -> str:
    from replay.check import rcp
    from replay.olympic import olympic

    # the minutes `recorder score` averages: a converged run's; marks (resumed, unverified) show in the table
    minutes = [r["minutes"] if (r := f.headline) and r["status"] == "success" else None for f in group]
    benchmark = next((f.facts.get("benchmark") for f in group if f.facts.get("benchmark")), None)
    score = olympic(minutes, benchmark)
    value = "none" if score.minutes is None else f"{score.minutes:.3f} minutes"
    dropped = f", {score.dropped} not converged" if score.dropped else ""
    texts = [f.mllog_text for f in group if f.mllog_text]
    check = rcp(texts, ruleset).summary() if texts else "RCP checker: no derived mllog"
    return (
        f'<p class="olympic"><b>olympic score: {_e(value)}</b> over {score.runs} runs{_e(dropped)}'
        f"{_e(' (' + score.note + ')') if score.note else ''} (mlperf-logging's result summarizer, "
        f'_compute_olympic_average)</p><p class="note">{_e(check)}</p>'
    )


def set_section(runs: list[RunFacts], charts: dict[str, Any], ruleset: str) -> str:
    """The head of a report on several runs."""
    groups: dict[int | None, list[RunFacts]] = defaultdict(list)
    for f in runs:
        groups[f.facts.get("global_batch_size")].append(f)
    out = [f"<h1>{len(runs)} runs</h1>"]
    for gbs in sorted(groups, key=lambda g: (g is None, g or 0)):
        out.append(f"<h2>GBS {_e(gbs)}: {len(groups[gbs])} runs</h2>{_group_score(groups[gbs], ruleset)}")
    cols = [
        "",
        "run",
        "origin",
        "GBS",
        "steps",
        "status",
        "passing step",
        "minutes",
        "scored as",
        "compliance",
        "RCP",
        "verify",
        "marks",
    ]
    rows = []
    for i, f in enumerate(runs):
        r = f.headline or {}
        swatch = f'<span style="color:{style(i)["color"]}">&#9632;</span>'
        cells = [
            f'<a href="#run-{i}">{_e(f.run_id)}</a>',
            _e(f.facts.get("origin")),
            _e(f.facts.get("global_batch_size")),
            _e(f.facts.get("steps")),
            _e(r.get("status", "-")),
            _e(r.get("passing_step") or "-"),
            "-" if r.get("minutes") is None else f"{r['minutes']:.3f}",
            _e(f.mllog_name),
            _compliance(f),
            "not run" if f.rcp_ok is None else ("PASSED" if f.rcp_ok else "FAILED"),
            "FAILED" if f.verify_problems else "intact",
            _e(_marks(f)),
        ]
        rows.append("<tr>" + f"<td>{swatch}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    out.append(f'<h2>Runs</h2><table class="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')
    charts["accuracy-all"] = accuracy_by_step(runs)
    reward, notes = reward_by_step(runs)
    charts["reward-all"] = reward
    out.append('<h2>Accuracy by step, every run</h2><div class="chart" id="accuracy-all"></div>')
    out.append('<h2>Reward by step, every run</h2><div class="chart" id="reward-all"></div>')
    out += [f'<p class="note">{_e(n)}</p>' for n in notes]
    return "".join(out)
