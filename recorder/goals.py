"""Each benchmark's quality goal, as mlperf-logging's ruleset files state it: the target and its direction.

The compliance checker's `closed_<benchmark>.yaml` says when an `eval_accuracy` line reaches the target, as
a Python condition: `v['value'] > s['target_accuracy']` (qwen35_397b_grpo, with `target_accuracy: 0.69`),
`(v['value'] <= 0.925) and v['value'] > 0.0` (llama2_70b_lora: a loss, lower is better),
`v['value'] >= 0.720 and v['value'] < 1.0`. The comparison on the quality side is the goal; the other bound
(`> 0.0`, `< 1.0`) is a sanity check. A condition of another shape (several metrics, a dict value) gives no
goal: nothing is then called a pass or a fail by the recorder, and the checker still judges the log.

The recorder's own runs record their target (`recorder train` writes `eval.target`); an imported log
records none, and is judged by its benchmark's goal, never by qwen35_397b_grpo's 0.69.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from recorder import rules

if TYPE_CHECKING:
    from recorder.store.kinds import RunOpened

_NUMBER = r"[0-9]+(?:\.[0-9]+)?"
_COMPARISON = re.compile(
    r"v\['value'\]\s*(<=|<|>=|>)\s*("
    + _NUMBER
    + r"|s\['target_accuracy'\])|("
    + _NUMBER
    + r")\s*(<=|<|>=|>)\s*v\['value'\]"
)
_TARGET_ACCURACY = re.compile(r"'target_accuracy'\s*:\s*(" + _NUMBER + ")")
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class Goal:
    """An evaluation passes when its value compares with `target` as `op` says (`>`, `>=`, `<`, `<=`)."""

    target: float
    op: str

    @property
    def lower_is_better(self) -> bool:
        return self.op.startswith("<")

    def passes(self, value: float | None) -> bool:
        if value is None:
            return False
        return {
            ">": value > self.target,
            ">=": value >= self.target,
            "<": value < self.target,
            "<=": value <= self.target,
        }[self.op]

    def sql(self, value: str) -> str:
        """The same comparison over an SQL expression."""
        return f"({value} {self.op} {self.target!r})"

    def best(self, values: list[float]) -> float:
        """The best of `values` by this goal's direction."""
        return min(values) if self.lower_is_better else max(values)

    def __str__(self) -> str:
        return f"{self.op} {self.target:g}"


TRAINED = Goal(rules.TARGET, ">")  # qwen35_397b_grpo's: the default of the runs `recorder train` records


def parse_goal(check: str, target_accuracy: float | None) -> Goal | None:
    """The goal in an ATLEAST_ONE_CHECK condition, or None when it is not one comparison of `v['value']` with
    a number (besides sanity bounds at 0 and 1)."""
    if "v['value'][" in check or " if " in check:
        return None
    found: list[tuple[str, float]] = []
    for m in _COMPARISON.finditer(check):
        if m.group(1) is not None:
            op, bound = m.group(1), m.group(2)
        else:
            op, bound = _FLIP[m.group(4)], m.group(3)
        if bound == "s['target_accuracy']":
            if target_accuracy is None:
                return None
            found.append((op, target_accuracy))
        else:
            found.append((op, float(bound)))
    upper = [(op, b) for op, b in found if op.startswith("<") and b not in (1.0,)]
    lower = [(op, b) for op, b in found if op.startswith(">") and b not in (0.0,)]
    if len(upper) == 1 and (not lower or lower[0][1] < upper[0][1]):  # a loss: at most the target (a floor aside)
        return Goal(upper[0][1], upper[0][0])
    if len(lower) == 1 and not upper:
        return Goal(lower[0][1], lower[0][0])
    return None


@cache
def _ruleset_goal(folder: Path, benchmark: str) -> Goal | None:
    path = folder / f"closed_{benchmark}.yaml"
    if not path.is_file():  # training_0.6.0: one file per benchmark, no divisions
        path = folder / f"{benchmark}.yaml"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    found = _TARGET_ACCURACY.search(text)
    target_accuracy = float(found.group(1)) if found else None
    for entry in yaml.safe_load(text) or []:
        if isinstance(entry, dict):
            key = entry.get("KEY")
            if isinstance(key, dict) and key.get("NAME") == "eval_accuracy" and "ATLEAST_ONE_CHECK" in key:
                return parse_goal(str(key["ATLEAST_ONE_CHECK"]), target_accuracy)
    return None


def _checker_root() -> Path:
    from mlperf_logging import compliance_checker  # the ruleset files the checker itself reads

    return Path(compliance_checker.__file__).parent


_FOLDER = re.compile(r"^training_(\d+)\.(\d+)\.(\d+)$")


@cache
def _rulesets() -> dict[str, Path]:
    """Every `training_X.Y.Z` folder of the installed mlperf-logging's checker, oldest first."""
    found: list[tuple[tuple[int, ...], str, Path]] = []
    for folder in _checker_root().iterdir():
        match = _FOLDER.match(folder.name)
        if match and folder.is_dir() and (folder / "common.yaml").is_file():
            found.append((tuple(int(g) for g in match.groups()), ".".join(match.groups()), folder))
    return {name: folder for _, name, folder in sorted(found)}


def _states(folder: Path, benchmark: str) -> bool:
    return (folder / f"closed_{benchmark}.yaml").is_file() or (folder / f"{benchmark}.yaml").is_file()


def benchmark_goal(benchmark: str | None, ruleset: str | None = None) -> Goal | None:
    """The benchmark's goal under `ruleset` (None, or a ruleset that has no file for it: the newest that
    has); None for a benchmark no installed ruleset states a goal for."""
    if not benchmark:
        return None
    known = _rulesets()
    names = ([ruleset] if ruleset in known else []) + list(reversed(known))
    for name in names:
        if _states(known[name], benchmark):
            return _ruleset_goal(known[name], benchmark)
    return None


def run_goal(benchmark: str | None, recorded_target: float | None, ruleset: str | None = None) -> Goal | None:
    """The goal a run's evaluations are judged by: the target it recorded (`recorder train`'s runs), in its
    benchmark's direction; else its benchmark's own (an imported log)."""
    own = benchmark_goal(benchmark or rules.BENCHMARK, ruleset)
    if recorded_target is not None:
        return Goal(recorded_target, own.op if own is not None else TRAINED.op)
    return own


def opened_goal(opened: RunOpened | None) -> Goal | None:
    """`run_goal` from a run's first run_opened (its benchmark, recorded target and ruleset)."""
    if opened is None:
        return run_goal(None, None, None)
    return run_goal(opened.benchmark, rules.recorded_target(opened), opened.ruleset)


def all_goals() -> dict[str, Goal]:
    """Every benchmark an installed ruleset has a `closed_<benchmark>.yaml` for, with its goal where one is
    stated (the history's table)."""
    names = {
        p.name.removeprefix("closed_").removesuffix(".yaml")
        for folder in _rulesets().values()
        for p in folder.glob("closed_*.yaml")
    }
    return {b: g for b in sorted(names - {"common"}) if (g := benchmark_goal(b)) is not None}
