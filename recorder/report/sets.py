"""The part of `recorder report` about a set of runs: each set's score as `recorder score` computes it
(replay.scorekeeping.score_runs: the result summarizer's strong-scaling score, its olympic average and its RCP check),
the runs table, and every run's curves overlaid."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from recorder.report.charts import accuracy_by_step, reward_by_step, style
from recorder.report.page_data import RunFacts

if TYPE_CHECKING:
    from replay.scorekeeping.set_score import SetScore


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _m(minutes: float | None) -> str:
    return "-" if minutes is None else f"{minutes:.3f}"


def _marks(f: RunFacts) -> str:
    marks = (
        (["UNVERIFIED"] if f.verify_problems else [])
        + (["RESUMED"] if f.resumed else [])
        + (["NOT COMPARABLE"] if f.not_comparable or f.other_evaluation else [])
        + (["LIVE"] if f.open_segments else [])
    )
    return ", ".join(marks) or "-"


def _compliance(f: RunFacts) -> str:
    checker = (f.headline or {}).get("checker")
    return "PASSED" if checker and checker.endswith("PASSED") else ("FAILED" if checker else "not run")


def _set_score(s: SetScore) -> str:
    scaling = f" x scaling factor {s.scaling_factor!r}" if s.scaling_factor != 1.0 else ""
    head = (
        f"<h2>{_e(s.extra.get('set', ''))}: {_e(s.benchmark)}, training {_e(s.ruleset)}, "
        f"{_e(s.division or '-')} division, {len(s.runs)} runs</h2>"
        f'<p class="olympic"><b>score: {_e(_m(s.score_minutes))} minutes</b> '
        f"(olympic average {_e(_m(s.olympic_minutes))} minutes{_e(scaling)}; mlperf-logging's result summarizer, "
        f"_compute_strong_score_standalone){'' if s.scored else ' <span class=mark>not scored</span>'}</p>"
    )
    notes = [*s.reasons] + ([s.rcp.summary()] if s.rcp is not None else [])
    return head + "".join(f'<p class="note">{_e(n)}</p>' for n in notes)


def score_sets(runs: list[RunFacts], ruleset: str | None) -> str:
    """Every set among the runs, scored by `recorder score`'s function; a set it refuses says why."""
    from replay.errors import ReplayError
    from replay.scorekeeping.score_runs import score_runs

    try:
        sets = score_runs([f.run.path for f in runs], ruleset, None, True)
    except ReplayError as e:
        return f'<p class="note"><span class="mark">not scored:</span> {_e(e)}</p>'
    return "".join(_set_score(s) for s in sets)


def set_section(runs: list[RunFacts], charts: dict[str, Any], ruleset: str | None) -> str:
    """The head of a report on several runs."""
    out = [f"<h1>{len(runs)} runs</h1>", score_sets(runs, ruleset)]
    cols = ["", "run", "origin", "GBS", "steps", "status", "passing step", "minutes", "scored as"]
    cols += ["compliance", "RCP", "verify", "marks"]
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
            _m(r.get("minutes")),
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
