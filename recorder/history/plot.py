"""Pictures of runs (extra `plot`): a run's timeline, and one metric across runs.

The timeline answers "what does each reading of the rule count?": training steps, weight updates,
checkpoint saves (the part that blocked the loop and the part written in the background), evaluations
in the order they ran, `run_start`, and one lane per interpretation ending where its `run_stop` lands.
Everything is read through the history views, so the picture shows what `recorder query` shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recorder.errors import InputError
from recorder.output import output_file
from recorder.rules import TARGET
from recorder.store.reader import recorded_run_id
from recorder.store.run import RunDir

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from recorder.history.views import History

MIN = 60e9  # ns per minute
_STEP_COLORS = ("#c6dbef", "#9ecae1")
_BLOCK, _BACKGROUND = "#cb181d", "#fcbba1"
_PASS, _FAIL = "#31a354", "#969696"
_LANES = ("steps", "weight updates", "checkpoint saves", "evaluations")
ZOOM_MARGIN = 0.08  # of the scored region's width, each side
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_DASHES = ("-", "--", "-.", ":")
MIN_SPAN = 0.05  # the narrowest y-range drawn: nearly equal scores must not look like a cliff


class PlotError(InputError):
    """A run that cannot be drawn (damaged, no run_start) or a metric that does not exist."""


@dataclass(frozen=True)
class PlotTimeline:
    """A run's facts for the picture, in minutes after run_start."""

    run_id: str
    steps: list[tuple[int, float | None, float | None]]  # (step, weight update, metrics time)
    saves: list[tuple[int, float, float, float]]  # (step, save begin, end of blocking, save end)
    evals: list[tuple[int, float, float, float | None, bool | None]]  # (step, start, stop, accuracy, passed)
    stops: list[tuple[str, float, int | None, str]]  # (interpretation, minutes, passing step, status)
    stopped: tuple[str, str] | None = None  # train_stop's (status, reason) when training did not complete
    outcome: str = ""  # what the score says, in words: why a run that failed failed


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError as e:
        raise PlotError("recorder plot needs matplotlib: pip install 'recorder[plot]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def load_timeline(history: History, run_id: str) -> PlotTimeline:
    """The run's timeline from the views (minutes after its run_start)."""
    q = history.query
    facts = q(f"SELECT run_start_ns FROM runs WHERE run_id = '{_quote(run_id)}'").to_pylist()
    if not facts or facts[0]["run_start_ns"] is None:
        raise PlotError(f"run {run_id}: no run_start event, so there is no timed region to draw")
    t0 = facts[0]["run_start_ns"]

    def m(ns: int | None) -> float | None:
        return None if ns is None else (ns - t0) / MIN

    where = f"WHERE run_id = '{_quote(run_id)}'"
    steps = [
        (r["step"], m(r["weight_update_ns"]), m(r["metrics_ns"]))
        for r in q(f"SELECT * FROM steps {where} ORDER BY step").to_pylist()
    ]
    saves = [
        (r["step"], m(r["save_begin_ns"]), m(r["save_begin_ns"] + int(r["blocked_s"] * 1e9)), m(r["save_end_ns"]))
        for r in q(f"SELECT * FROM checkpoints {where} AND save_begin_ns IS NOT NULL ORDER BY step").to_pylist()
    ]
    evals = []
    for r in q(f"SELECT * FROM evals {where} AND key = 'accuracy' ORDER BY eval_order").to_pylist():
        stop = m(r["stop_ns"] or r["result_ns"])
        start = m(r["start_ns"]) if r["start_ns"] is not None else stop
        evals.append((r["step"], start, stop, r["value"], r["passed"]))
    stops = [
        (
            r["interpretation"],
            r["minutes"] if r["run_stop_ns"] is None else m(r["run_stop_ns"]),
            r["passing_step"],
            r["status"],
        )
        for r in q(
            f"SELECT * FROM scores {where} ORDER BY interpretation = 'official' DESC, "
            "interpretation = 'as-recorded' DESC, minutes, interpretation"
        ).to_pylist()
        if r["minutes"] is not None or r["run_stop_ns"] is not None
    ]
    ended = q(
        f"SELECT data->>'status' AS status, data->>'reason' AS reason FROM events {where} AND kind = 'train_stop' "
        "ORDER BY time_ns DESC LIMIT 1"
    ).to_pylist()
    stopped = (ended[0]["status"], ended[0]["reason"] or "") if ended and ended[0]["status"] != "completed" else None
    return PlotTimeline(run_id, steps, saves, evals, stops, stopped, _outcome(history, run_id, evals))  # type: ignore[arg-type]


def _outcome(history: History, run_id: str, evals: list[tuple[int, float, float, float | None, bool | None]]) -> str:
    """The run's score in words, from the `runs` view (what replay wrote) and its evaluations."""
    where = f"WHERE run_id = '{_quote(run_id)}'"
    row = history.query(
        f"SELECT status, passing_step, minutes, scored_as, pass_op, pass_target FROM runs {where}"
    ).to_pylist()
    status, how = (row[0]["status"], row[0]["scored_as"]) if row else (None, None)
    op, target = (row[0]["pass_op"] or ">", row[0]["pass_target"]) if row else (">", None)
    goal = "its benchmark's target" if target is None else f"{op} {target:g}"
    scored = [(accuracy, step) for step, _, _, accuracy, _ in evals if accuracy is not None]
    best_of = min if op.startswith("<") else max  # a loss is best at its lowest
    best = f"; the best scored {best_of(scored)[0]:.4f} at step {best_of(scored)[1]}" if scored else ""
    if status == "success":
        return f"converged ({how}): step {row[0]['passing_step']} passes; run_stop at {row[0]['minutes']:.3f} min"
    if status == "aborted":
        return f"did not converge ({how}): no evaluated checkpoint passes the target ({goal}){best}"
    if status == "no checkpoint":
        return "no checkpoint was saved, so nothing could be evaluated or scored"
    why = history.query(f"SELECT why FROM scores {where} AND interpretation = 'official'").to_pylist()
    reason = why[0]["why"] if why and why[0]["why"] else "replay wrote no score (`recorder replay RUN_DIR`)"
    return f"not scored: {reason}{best}"


def _quote(text: str) -> str:
    return text.replace("'", "''")


def _draw(ax: Axes, t: PlotTimeline, lanes: list[str]) -> None:
    y = {name: len(lanes) - 1 - i for i, name in enumerate(lanes)}
    previous = 0.0
    for i, (_step, update, metrics) in enumerate(t.steps):
        end = update if update is not None else metrics
        if end is None:
            continue
        ax.barh(y["steps"], end - previous, left=previous, height=0.6, color=_STEP_COLORS[i % 2], edgecolor="none")
        previous = end
        if update is not None and "weight updates" in y:
            ax.plot([update, update], [y["weight updates"] - 0.3, y["weight updates"] + 0.3], color="#08519c", lw=1)
    for _, begin, unblocked, end in t.saves:
        ax.barh(y["checkpoint saves"], end - unblocked, left=unblocked, height=0.6, color=_BACKGROUND, edgecolor="none")
        ax.barh(
            y["checkpoint saves"], max(unblocked - begin, 1e-9), left=begin, height=0.6, color=_BLOCK, edgecolor="none"
        )
    for _step, start, stop, _accuracy, passed in t.evals:
        color = _PASS if passed else _FAIL
        ax.barh(y["evaluations"], max(stop - start, 1e-9), left=start, height=0.6, color=color, edgecolor="white")
    for name, minutes, _, _ in t.stops:
        row = y[f"run_stop: {name}"]
        ax.plot([0, minutes], [row, row], color="#6a51a3", lw=2, alpha=0.35)
        ax.plot([minutes], [row], marker="|", markersize=14, mew=2.5, color="#6a51a3")
    ax.axvline(0, color="black", lw=1)
    ax.set_yticks(list(y.values()), list(y.keys()))
    ax.grid(axis="x", color="#eeeeee")
    ax.set_axisbelow(True)


def _label(ax: Axes, t: PlotTimeline, lanes: list[str], lo: float, hi: float) -> None:
    """Text only inside [lo, hi]: step numbers, accuracies, and each interpretation's score."""
    y = {name: len(lanes) - 1 - i for i, name in enumerate(lanes)}
    previous = 0.0
    for step, update, metrics in t.steps:
        end = update if update is not None else metrics
        if end is None:
            continue
        mid = (previous + end) / 2
        if lo <= mid <= hi and (end - previous) > (hi - lo) / 40:
            ax.text(mid, y["steps"], str(step), ha="center", va="center", fontsize=8)
        previous = end
    for order, (step, start, stop, accuracy, _passed) in enumerate(t.evals, 1):
        mid = (start + stop) / 2
        if lo <= mid <= hi and accuracy is not None and (stop - start) > (hi - lo) / 16:
            ax.text(
                mid,
                y["evaluations"],
                f"#{order}: step {step}\n{accuracy:.4g}",
                ha="center",
                va="center",
                fontsize=7,
                color="white",
                fontweight="bold",
            )
    for name, minutes, passing_step, status in t.stops:
        if lo <= minutes <= hi:
            passing = f"step {passing_step}" if passing_step is not None else "no step"
            right = minutes > lo + 0.75 * (hi - lo)  # near the right edge: write the text to the left
            ax.text(
                minutes,
                y[f"run_stop: {name}"] + 0.32,
                f" {minutes:.3f} min, {passing} ({status}) ",
                ha="right" if right else "left",
                va="bottom",
                fontsize=7.5,
            )


def zoom_range(t: PlotTimeline) -> tuple[float, float] | None:
    """The scored region plus a margin: from the first save (or evaluated step) to the last run_stop. The
    offline evaluations that come later are not scored, so they do not stretch it (the whole-run panel shows
    them); without any run_stop, the saves' ends bound it."""
    starts = [b for _, b, _, _ in t.saves]
    if not starts and t.evals:
        steps = {s: u for s, u, _ in t.steps if u is not None}
        starts = [steps[s] for s, *_ in t.evals if s in steps]
    ends = [m for _, m, _, _ in t.stops] or [e for _, _, _, e in t.saves]
    if not starts or not ends:
        return None
    lo, hi = min(starts), max(max(ends), min(starts))
    pad = max((hi - lo) * ZOOM_MARGIN, 1e-3)
    return lo - pad, hi + pad


def plot_timeline(run_dir: Path, out: Path) -> Path:
    """Draw one run's timeline into `out` (PNG, SVG or PDF by suffix)."""
    from recorder.history.views import open_runs

    plt = _matplotlib()
    run = RunDir.open(run_dir)
    history = open_runs(run.path.parent, [run])
    with history:
        if history.problems and not history.runs:
            raise PlotError(f"cannot draw {run.path}: {history.problems[0]}")
        t = load_timeline(history, history.runs[0].run_id if history.runs else recorded_run_id(run))
    fig = timeline_figure(t)
    out.parent.mkdir(parents=True, exist_ok=True)
    with output_file(out) as f:  # never through a symlink planted at -o
        fig.savefig(f, dpi=110, format=out.suffix.lstrip(".").lower() or "png")
    plt.close(fig)
    return out


def _clip(text: str, limit: int = 160) -> str:
    return text[:limit] + ("..." if len(text) > limit else "")


def timeline_figure(t: PlotTimeline) -> Any:
    """The figure `plot_timeline` saves: the whole run, then the scored region zoomed; the title says how
    the run ended and, when training did not complete or the run did not converge, why."""
    plt = _matplotlib()
    present = {
        "steps": t.steps,
        "weight updates": [u for _, u, _ in t.steps if u is not None],
        "checkpoint saves": t.saves,
        "evaluations": t.evals,
    }
    lanes = [*(lane for lane in _LANES if present[lane]), *(f"run_stop: {name}" for name, *_ in t.stops)]
    zoom = zoom_range(t)
    panels = 2 if zoom else 1
    fig, axes = plt.subplots(panels, 1, figsize=(13, (2.4 + 0.42 * len(lanes)) * panels), squeeze=False)
    full_hi = (
        max(
            [0.0]
            + [e for _, e, _, _ in t.saves]
            + [s for _, _, s, _, _ in t.evals]
            + [m for _, m, _, _ in t.stops]
            + [u or w or 0.0 for _, u, w in t.steps]
        )
        * 1.03
        + 0.1
    )
    ranges = [(-full_hi * 0.01, full_hi)] + ([zoom] if zoom else [])
    titles = ["whole run", "the scored region (zoomed)"]
    for ax, (lo, hi), title in zip(axes[:, 0], ranges, titles, strict=False):
        _draw(ax, t, lanes)
        _label(ax, t, lanes, lo, hi)
        ax.set_xlim(lo, hi)
        if title.startswith("the scored"):  # guides from each run_stop up to the fact it is read from
            for minutes in {m for _, m, _, _ in t.stops}:
                ax.axvline(minutes, color="#6a51a3", lw=0.8, ls=":", alpha=0.6)
        ax.set_title(title, fontsize=9, loc="left")
        ax.set_xlabel("minutes after run_start")
    _legend(fig)
    title = f"run {t.run_id}: where run_stop lands under each reading of the rule"
    if t.outcome:
        title += f"\n{_clip(t.outcome)}"
    if t.stopped is not None:  # a failed or interrupted run says why, on the picture itself
        status, reason = t.stopped
        title += f"\ntraining {status}: {_clip(reason)}"
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def _legend(fig: Any) -> None:
    from matplotlib.patches import Patch

    handles = [
        Patch(color=_STEP_COLORS[1], label="training step"),
        Patch(color="#08519c", label="weight update"),
        Patch(color=_BLOCK, label="save: blocked the loop"),
        Patch(color=_BACKGROUND, label="save: background"),
        Patch(color=_PASS, label="evaluation: passed (reached the target)"),
        Patch(color=_FAIL, label="evaluation: failed"),
        Patch(color="#6a51a3", label="scored time (run_start to run_stop)"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7.5, frameon=False)


def _targets(history: History, key: str) -> list[tuple[float, str]]:
    """The targets an evaluation key was judged by, with their comparison (each benchmark's own for imported
    logs: recorder.goals); the default benchmark's for its accuracy when none is known."""
    rows = history.query(
        "SELECT DISTINCT target, coalesce(pass_op, '>') AS op FROM evals WHERE key = '"
        + _quote(key)
        + "' AND target IS NOT NULL ORDER BY target"
    ).to_pylist()
    found = [(float(r["target"]), str(r["op"])) for r in rows]
    return found or ([(TARGET, ">")] if key == "accuracy" else [])


def _at_least(ax: Axes, ys: list[float]) -> None:
    """A y-range of at least MIN_SPAN around the values (zero-shot scores of one model differ by 0.001s)."""
    lo, hi = min(ys), max(ys)
    if hi - lo < MIN_SPAN:
        mid = (lo + hi) / 2
        ax.set_ylim(mid - MIN_SPAN / 2, mid + MIN_SPAN / 2)


def plot_metric(history: History, metric: str, out: Path) -> Path:
    """One curve per run against the step: a `steps` column (e.g. reward), or an evaluation score by its key
    in the `evals` view ('accuracy' for the benchmark's pass@k, a task name for zero-shot scores)."""
    plt = _matplotlib()
    fig = metric_figure(history, metric)
    out.parent.mkdir(parents=True, exist_ok=True)
    with output_file(out) as f:  # never through a symlink planted at -o
        fig.savefig(f, dpi=110, format=out.suffix.lstrip(".").lower() or "png")
    plt.close(fig)
    return out


def metric_figure(history: History, metric: str) -> Any:
    """The figure `plot_metric` saves: integer step ticks, the target on evaluation scores."""
    plt = _matplotlib()
    columns = history.query("SELECT * FROM steps LIMIT 0").column_names
    numeric = [c for c in columns if c not in ("run_id", "step")]
    scores = [
        r["key"]
        for r in history.query(
            "SELECT DISTINCT key FROM evals WHERE key IS NOT NULL AND value IS NOT NULL ORDER BY key"
        ).to_pylist()
    ]
    if metric in numeric:
        sql = f'SELECT run_id, step, "{metric}" AS y FROM steps WHERE "{metric}" IS NOT NULL ORDER BY run_id, step'
    elif metric in scores:  # a known key: safe to quote into the statement
        sql = (
            "SELECT run_id, step, max(value) AS y FROM evals WHERE key = '"
            + metric.replace("'", "''")
            + "' AND value IS NOT NULL AND step IS NOT NULL GROUP BY run_id, step ORDER BY run_id, step"
        )
    else:
        raise PlotError(
            f"unknown metric {metric!r}: choose a column of the steps view ({', '.join(numeric)}) "
            f"or an evaluation key ({', '.join(scores) or 'none recorded'})"
        )
    rows = history.query(sql).to_pylist()
    if not rows:
        raise PlotError(f"no run under {history.root} has a {metric!r} value")
    curves: dict[str, tuple[list[int], list[float]]] = {}
    for r in rows:
        xs, ys = curves.setdefault(r["run_id"], ([], []))
        xs.append(r["step"])
        ys.append(r["y"])
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(10, 5.5))
    for i, (run_id, (xs, ys)) in enumerate(curves.items()):
        # runs that coincide stay distinguishable: each has its own marker and dash, drawn see-through
        marker = _MARKERS[i % len(_MARKERS)] if len(xs) < 60 else None
        ax.plot(xs, ys, marker=marker, ls=_DASHES[i % len(_DASHES)], lw=1.2, alpha=0.8, markersize=5, label=run_id)
    targets = _targets(history, metric) if metric in scores else []
    for target, op in targets:
        ax.axhline(target, color="#cb181d", lw=1, ls="--", label=f"target ({metric} {op} {target:g})")
    _at_least(ax, [y for _, ys in curves.values() for y in ys] + [t for t, _ in targets])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} by step, {len(curves)} run{'' if len(curves) == 1 else 's'} under {history.root.name}/")
    ax.grid(color="#eeeeee")
    if len(curves) <= 20:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
