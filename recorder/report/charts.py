"""Plotly figure specs (plain JSON) for `recorder report`: a run's timeline, accuracy and reward by step.

The specs are data; plotly.js, inlined in the page, draws them. Long runs are thinned so the page stays
small (report.series: a timeline lane keeps the scored region's items first, a curve each bucket's low and
high), and the page says so.
"""

from __future__ import annotations

from html import escape
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recorder.report.long_series import MIN_NS, bounds, end_ns, minutes, pick, rows, thin
from recorder.report.page_data import RunFacts
from recorder.rules import TARGET

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f")
DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross", "triangle-down")
_STEPS = ("#c6dbef", "#9ecae1")  # alternate, so neighbouring steps stay apart
_UPDATE, _BLOCK, _BACKGROUND = "#08519c", "#cb181d", "#fcbba1"
_PASS, _FAIL, _STOP, _CHECKPOINT = "#31a354", "#969696", "#6a51a3", "#000000"
ZOOM_MARGIN = 0.08  # of the scored region's width, each side (as recorder plot's)


def plotly_text(value: object) -> str:
    """A value from the data, as plotly text: plotly reads `<b>`, `<a href>` and entities in hover and
    legend text, so whatever the data holds is escaped (plotly shows the entities as the characters)."""
    return escape(str(value), quote=True)


def style(i: int) -> dict[str, Any]:
    """Run i's colour, dash and marker: three cues, so overlapping curves stay apart in grey print too."""
    return {"color": PALETTE[i % len(PALETTE)], "dash": DASHES[i % len(DASHES)], "symbol": SYMBOLS[i % len(SYMBOLS)]}


def _t(ns: int, t0: int) -> str:
    return f"{(ns - t0) / MIN_NS:.3f} min ({(ns - t0) / 1e9:.3f} s after run_start)"


def scored_region(f: RunFacts, t0: int) -> tuple[float, float] | None:
    """What the score counts, padded: from the first save (the validation start's; with none, the first
    evaluated step's weight update) to the latest run_stop under any interpretation, or with no run_stop the
    last save's end. The offline evaluations come later and are not scored ("whole run" shows them); this is
    `recorder plot`'s zoomed panel too."""
    saves = bounds(minutes(f.checkpoints["save_begin_ns"], t0))
    evaluated = pc.is_in(f.steps["step"], value_set=pa.array([e["step"] for e in f.evals], pa.int64()))
    updates = bounds(minutes(f.steps.filter(evaluated)["weight_update_ns"], t0))
    start = saves[0] if saves else (updates[0] if updates else None)
    stops = [(r["run_stop_ns"] - t0) / MIN_NS for r in f.scores if r["run_stop_ns"] is not None]
    saved = bounds(minutes(f.checkpoints["save_end_ns"], t0))
    ends = stops or ([saved[1]] if saved else [])
    if start is None or not ends:
        return None
    hi = max(max(ends), start)
    pad = max((hi - start) * ZOOM_MARGIN, 1e-3)
    return start - pad, hi + pad


def _bars(name: str, lane: str, base: list[float], width: list[float], color: Any, hover: list[str]) -> dict[str, Any]:
    return {
        "type": "bar",
        "orientation": "h",
        "name": name,
        "y": [lane] * len(base),
        "base": base,
        "x": width,
        "marker": {"color": color, "line": {"width": 0}},
        "hovertext": hover,
        "hoverinfo": "text",
        "width": 0.6,
    }


def _marks(
    name: str, lane: str, xs: list[float], symbol: str, color: str, hover: list[str], size: int
) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "y": [lane] * len(xs),
        "x": xs,
        "marker": {"symbol": symbol, "color": color, "size": size, "line": {"width": 2, "color": color}},
        "hovertext": hover,
        "hoverinfo": "text",
    }


def timeline(f: RunFacts, t0: int) -> tuple[dict[str, Any], list[str]]:
    """The run's timeline figure, and notes on what was thinned."""

    def m(ns: int) -> float:
        return (ns - t0) / MIN_NS

    zoom = scored_region(f, t0) or (float("-inf"), float("inf"))
    traces: list[dict[str, Any]] = []
    notes: list[str] = []
    lanes: list[str] = []

    steps = f.steps.filter(pc.is_valid(end_ns(f.steps)))
    ends = minutes(end_ns(steps), t0)
    starts = np.concatenate([[0.0], ends[:-1]])
    keep = pick(ends, *zoom)
    if len(keep) < len(ends):
        notes.append(f"steps and weight updates: {len(keep):,} of {len(ends):,} drawn (the scored region's first)")
    if len(keep):
        lanes += ["steps"]
        picked = rows(steps, keep)
        hover = [f"step {s['step']}<br>{_step_text(s, t0)}" for s in picked]
        shade = [_STEPS[i % 2] for i in keep.tolist()]
        traces.append(
            _bars("training step", "steps", starts[keep].tolist(), (ends - starts)[keep].tolist(), shade, hover)
        )
        updates = [
            (s, x) for s, x in zip(picked, ends[keep].tolist(), strict=True) if s["weight_update_ns"] is not None
        ]
        if updates:
            lanes += ["weight updates"]
            hover = [f"step {s['step']}: weight update at {_t(s['weight_update_ns'], t0)}" for s, _ in updates]
            xs = [x for _, x in updates]
            traces.append(_marks("weight update", "weight updates", xs, "line-ns", _UPDATE, hover, 12))

    saves = f.checkpoints.filter(pc.is_valid(f.checkpoints["save_begin_ns"]))
    keep = pick(minutes(saves["save_begin_ns"], t0), *zoom)
    if len(keep) < saves.num_rows:
        notes.append(f"checkpoints: {len(keep):,} of {saves.num_rows:,} drawn (the scored region's first)")
    if len(keep):
        lanes += ["checkpoint saves"]
        picked = rows(saves, keep)
        begin = [m(c["save_begin_ns"]) for c in picked]
        blocked = [(c["blocked_s"] or 0.0) / 60 for c in picked]
        end = [m(c["save_end_ns"] or c["committed_ns"]) for c in picked]
        # every fact on the commit marker; the two bars say only their part (three copies of the facts
        # would triple the page's largest item)
        hover = [_checkpoint_text(c, t0) for c in picked]
        spent = [f"checkpoint step {c['step']}: blocked the loop {c['blocked_s'] or 0:.3f} s" for c in picked]
        traces.append(
            _bars("save: blocked the loop", "checkpoint saves", begin, [max(b, 1e-6) for b in blocked], _BLOCK, spent)
        )
        unblocked = [b + k for b, k in zip(begin, blocked, strict=True)]
        widths = [max(e - u, 1e-6) for e, u in zip(end, unblocked, strict=True)]
        written = [
            f"checkpoint step {c['step']}: written in the background {c['background_s'] or 0:.3f} s" for c in picked
        ]
        traces.append(_bars("save: background", "checkpoint saves", unblocked, widths, _BACKGROUND, written))
        traces.append(_marks("checkpoint committed", "checkpoint saves", end, "diamond", _CHECKPOINT, hover, 9))

    evals = [e for e in f.evals if (e["stop_ns"] or e["result_ns"]) is not None]
    if evals:
        lanes += ["evaluations"]
        stop = [m(e["stop_ns"] or e["result_ns"]) for e in evals]
        start = [m(e["start_ns"]) if e["start_ns"] is not None else s for e, s in zip(evals, stop, strict=True)]
        colors = [_PASS if e["passed"] else _FAIL for e in evals]
        hover = [_eval_text(e, t0) for e in evals]
        widths = [max(b - a, 1e-6) for a, b in zip(start, stop, strict=True)]
        bars = _bars("evaluation (green: passed)", "evaluations", start, widths, colors, hover)
        bars["marker"]["line"] = {"width": 1, "color": "#ffffff"}  # back-to-back evaluations stay apart
        traces.append(bars)

    stops = [r for r in f.scores if r["run_stop_ns"] is not None and r["run_start_ns"] is not None]
    for r in stops:
        lane = f"run_stop: {r['interpretation']}"
        lanes.append(lane)
        at = (r["run_stop_ns"] - r["run_start_ns"]) / MIN_NS
        text = (
            f"{plotly_text(r['interpretation'])}: {plotly_text(r['status'])}, passing step {r['passing_step']}, "
            f"run_stop at {at:.3f} min ({(r['run_stop_ns'] - r['run_start_ns']) / 1e9:.3f} s)"
        )
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": lane,
                "showlegend": False,
                "x": [0, at],
                "y": [lane, lane],
                "line": {"color": _STOP, "width": 2},
                "marker": {"symbol": ["line-ns", "line-ns"], "size": [0, 16], "color": _STOP, "line": {"width": 3}},
                "hovertext": [text, text],
                "hoverinfo": "text",
            }
        )
    span = [float(ends.min()), float(ends.max())] if len(ends) else []
    everything = [0.0, *span, *(x for t in traces for x in _ends(t))]
    full = (min(everything) - 0.2, max(everything) * 1.02 + 0.2)
    shown = zoom if scored_region(f, t0) else full
    layout = {
        "barmode": "overlay",
        "height": 170 + 34 * len(lanes),
        "margin": {"l": 190, "r": 20, "t": 50, "b": 40},
        "xaxis": {"title": {"text": "minutes after run_start"}, "range": list(shown), "zeroline": True},
        "yaxis": {"categoryorder": "array", "categoryarray": lanes, "autorange": "reversed", "type": "category"},
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.25},
        "shapes": [{"type": "line", "x0": 0, "x1": 0, "yref": "paper", "y0": 0, "y1": 1, "line": {"width": 1}}],
        "updatemenus": [
            {
                "type": "buttons",
                "direction": "right",
                "x": 0,
                "y": 1.0,
                "yanchor": "bottom",
                "pad": {"b": 4},
                "xanchor": "left",
                "buttons": [
                    {"label": "scored region", "method": "relayout", "args": [{"xaxis.range": list(shown)}]},
                    {"label": "whole run", "method": "relayout", "args": [{"xaxis.range": list(full)}]},
                ],
            }
        ],
    }
    return {"data": traces, "layout": layout}, notes


def _ends(trace: dict[str, Any]) -> list[float]:
    if trace["type"] == "bar":
        return [b + w for b, w in zip(trace["base"], trace["x"], strict=True)]
    return [x for x in trace["x"] if x is not None]


def _step_text(s: dict[str, Any], t0: int) -> str:
    parts = []
    if s["weight_update_ns"] is not None:
        parts.append(f"weight update at {_t(s['weight_update_ns'], t0)}")
    if s["reward"] is not None:
        parts.append(f"reward {s['reward']:.4f}")
    return "<br>".join(parts)


def _checkpoint_text(c: dict[str, Any], t0: int) -> str:
    rows = [f"<b>checkpoint step {c['step']}</b>"]
    if c["weight_update_ns"] is not None:
        rows.append(f"weight update: {_t(c['weight_update_ns'], t0)}")
    rows.append(f"save begin: {_t(c['save_begin_ns'], t0)}")
    rows.append(f"blocked the loop: {c['blocked_s'] or 0:.3f} s")
    if c["save_end_ns"] is not None:
        rows.append(f"save end: {_t(c['save_end_ns'], t0)}")
    rows.append(f"sha256: {plotly_text((c['sha256'] or '-')[:16])}")
    return "<br>".join(rows)


def _eval_text(e: dict[str, Any], t0: int) -> str:
    rows = [f"<b>evaluation #{e['eval_order']}: step {e['step']}</b>"]
    if e["start_ns"] is not None:
        rows.append(f"start: {_t(e['start_ns'], t0)}")
    end = e["stop_ns"] or e["result_ns"]
    rows.append(f"stop: {_t(end, t0)}")
    if e["value"] is not None:
        verdict = "passed" if e["passed"] else "failed"
        rows.append(f"accuracy {e['value']:.4f} (target {e['target']}: {verdict})")
    else:
        rows.append(f"failed: {plotly_text(e['reason'])}")
    if e["worker"]:
        rows.append(f"worker {plotly_text(e['worker'])}")
    return "<br>".join(rows)


def accuracy_by_step(runs: list[RunFacts]) -> dict[str, Any]:
    """Each run's evaluated accuracy against its step, with the target line."""
    traces = []
    for i, f in enumerate(runs):
        scored = sorted((e for e in f.evals if e["value"] is not None), key=lambda e: e["step"])
        st = style(i)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": plotly_text(f.run_id),
                "x": [e["step"] for e in scored],
                "y": [e["value"] for e in scored],
                "line": {"color": st["color"], "dash": st["dash"]},
                "marker": {"symbol": st["symbol"], "size": 9, "color": st["color"]},
                "hovertext": [
                    f"{f.run_id}<br>step {e['step']}: {e['value']:.4f} (evaluation #{e['eval_order']})" for e in scored
                ],
                "hoverinfo": "text",
            }
        )
    op, at = next((f.goal for f in runs if f.goal is not None), (">", TARGET))  # the first run's benchmark's
    target = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": at, "y1": at}
    passes = {">": "above", ">=": "at or above", "<": "below", "<=": "at or below"}[op]
    others = sorted({t for f in runs for t in f.not_comparable})  # a run judged by another target shows it
    return {
        "data": traces,
        "layout": {
            "height": 360,
            "margin": {"l": 60, "r": 20, "t": 30, "b": 50},
            "xaxis": {"title": {"text": "step"}, "dtick": 1},
            "yaxis": {"title": {"text": "accuracy (pass@k)"}},
            "shapes": [target | {"line": {"color": "#cb181d", "dash": "dash", "width": 1.5}}]
            + [target | {"y0": t, "y1": t, "line": {"color": "#969696", "dash": "dot", "width": 1.5}} for t in others],
            "annotations": [
                {
                    "xref": "paper",
                    "x": 1,
                    "y": at,
                    "xanchor": "right",
                    "yanchor": "bottom",
                    "text": f"target: passes {passes} {at:g}",
                    "showarrow": False,
                    "font": {"color": "#cb181d"},
                }
            ],
            "hovermode": "closest",
            "showlegend": True,
        },
    }


def reward_by_step(runs: list[RunFacts]) -> tuple[dict[str, Any], list[str]]:
    """Each run's reward against its step (thinned to MAX_POINTS per run)."""
    traces, notes = [], []
    for i, f in enumerate(runs):
        reward = np.asarray(f.steps["reward"].to_numpy(zero_copy_only=False), np.float64)
        drawn = np.isfinite(reward)
        step = np.asarray(f.steps["step"].to_numpy(zero_copy_only=False), np.float64)
        xs, ys = thin(step[drawn], reward[drawn])
        if len(xs) < int(drawn.sum()):
            notes.append(
                f"{f.run_id}: {int(drawn.sum()):,} steps drawn as {len(xs):,} points (each bucket's low and high)"
            )
        st = style(i)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers" if len(xs) <= 60 else "lines",
                "name": plotly_text(f.run_id),
                "x": xs,
                "y": ys,
                "line": {"color": st["color"], "dash": st["dash"], "width": 1.5},
                "marker": {"symbol": st["symbol"], "size": 6, "color": st["color"]},
            }
        )
    layout = {
        "height": 340,
        "margin": {"l": 60, "r": 20, "t": 30, "b": 50},
        "xaxis": {"title": {"text": "step"}},
        "yaxis": {"title": {"text": "reward"}},
        "hovermode": "x unified" if len(runs) > 1 else "closest",
        "showlegend": True,
    }
    return {"data": traces, "layout": layout}, notes
