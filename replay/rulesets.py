"""Every MLPerf Training ruleset the installed mlperf-logging ships, discovered from its own files.

Nothing here is a list of rulesets or benchmarks: a ruleset is a `compliance_checker/training_X.Y.Z/`
folder of the installed package; its divisions are the `<division>_common.yaml` files there; a division's
benchmarks are those its `submission_benchmark` CHECK accepts and for which the checker has a
`<division>_<benchmark>.yaml` to load (a benchmark the CHECK names without that file would crash the
checker); RCPs are the `rcp_checker/training_X.Y.Z/rcps_<benchmark>.json` files. Upgrading mlperf-logging
upgrades what the recorder knows.

A `KnownRuleset` is the one value a replay carries: looked up once where its name enters, it holds the facts
every later step reads (its divisions and RCPs, its offline-evaluation rule's row, where its accuracy shapes
are read), so nothing on the path looks a ruleset up by name again.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import yaml

from recorder import rules
from replay.accuracy_shapes import Fields, fields_in_rule_files
from replay.errors import RulesetMismatchError, UnknownBenchmarkError, UnknownRulesetError
from replay.ruleset_facts import FACTS, RulesetFacts

USAGE = "training"
_FOLDER = re.compile(rf"^{USAGE}_(\d+)\.(\d+)\.(\d+)$")
_IN_LIST = re.compile(r"\bin\s*(\[[^\]]*\])")


@dataclass(frozen=True)
class KnownRuleset:
    """One `training_X.Y.Z` ruleset as the installed checker defines it."""

    name: str  # "5.1.0"
    divisions: tuple[tuple[str, tuple[str, ...]], ...]  # (division, benchmarks the checker can check)
    rcp_benchmarks: tuple[str, ...]
    # the facts its offline-evaluation rule fixes (replay.ruleset_facts.FACTS), None where it states no such rule
    offline_rule: RulesetFacts | None = None
    # its checker folder, then every other installed ruleset's, newest first: where an accuracy's shape is read
    rule_folders: tuple[Path, ...] = ()

    @property
    def version(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.name.split("."))

    @property
    def benchmarks(self) -> tuple[str, ...]:
        """Every benchmark of any division, sorted."""
        return tuple(sorted({b for _, bs in self.divisions for b in bs}))

    def benchmarks_of(self, division: str | None) -> tuple[str, ...]:
        """A division's benchmarks; every benchmark when the division is unknown or not stated."""
        return dict(self.divisions).get(division or "", self.benchmarks)

    def has_rcps(self, benchmark: str | None) -> bool:
        return benchmark in self.rcp_benchmarks

    def offline_facts(self, benchmark: str | None) -> RulesetFacts | None:
        """The facts this ruleset's offline-evaluation rule states for `benchmark`, or None: its rule does not
        judge that benchmark, or it has none."""
        rule = self.offline_rule
        return rule if rule is not None and benchmark is not None and rule.benchmark == benchmark else None

    def offline_evaluation(self, benchmark: str | None) -> bool:
        """Whether an offline-evaluation rule (and so its interpretations) applies to `benchmark`: this ruleset
        states its facts for it (replay.ruleset_facts)."""
        return self.offline_facts(benchmark) is not None

    def accuracy_fields(self, division: str | None, benchmark: str | None) -> Fields:
        """The fields `eval_accuracy` holds for `benchmark` under this ruleset (replay.accuracy_shapes); a
        ruleset without that benchmark takes the shape from the newest that has it, so a log replayed under
        another ruleset is read as it was written."""
        return fields_in_rule_files(self.rule_folders, division, benchmark)

    def benchmark_problem(self, benchmark: str | None, division: str | None) -> str | None:
        """Why this ruleset does not know `benchmark` (naming those it knows), or None."""
        try:
            self.require_benchmark(benchmark, division, typed=False)
        except RulesetMismatchError as e:
            return str(e)
        return None

    def require_benchmark(self, benchmark: str | None, division: str | None, *, typed: bool) -> None:
        """Refuse a benchmark this ruleset does not know, naming the ones it does.

        `typed`: the ruleset came from a flag the user typed (exit 2); else from recorded data (exit 1).
        """
        if benchmark is None:
            return
        known = self.benchmarks_of(division)
        if benchmark in known:
            return
        where = f" ({division} division)" if division in dict(self.divisions) else ""
        message = (
            f"benchmark {benchmark!r} is not in training {self.name}{where}: mlperf-logging's checker knows "
            f"{', '.join(known)}"
        )
        raise (UnknownBenchmarkError if typed else RulesetMismatchError)(
            message + ("; give the log's own ruleset with --ruleset" if typed else "")
        )


def checker_root() -> Path:
    from mlperf_logging import compliance_checker

    return Path(compliance_checker.__file__).parent


def rcp_root() -> Path:
    from mlperf_logging import rcp_checker

    return Path(rcp_checker.__file__).parent


def _accepted_benchmarks(common_yaml: Path) -> list[str]:
    """The list literal in the `submission_benchmark` CHECK (`v['value'] in [...]`) of one YAML file."""
    records = yaml.load(common_yaml.read_text(encoding="utf-8"), Loader=yaml.BaseLoader) or []
    for record in records:
        key = record.get("KEY") if isinstance(record, dict) else None
        if isinstance(key, dict) and key.get("NAME") == "submission_benchmark":
            match = _IN_LIST.search(str(key.get("CHECK", "")))
            if match:
                names = ast.literal_eval(match.group(1))
                return [n for n in names if isinstance(n, str)]
    return []


def _load(folder: Path, name: str) -> KnownRuleset:
    divisions: list[tuple[str, tuple[str, ...]]] = []
    for common in sorted(folder.glob("*_common.yaml")):
        division = common.name.removesuffix("_common.yaml")
        accepted = _accepted_benchmarks(common)
        divisions.append((division, tuple(b for b in accepted if (folder / f"{division}_{b}.yaml").is_file())))
    if not divisions:  # training_0.6.0: no divisions, one common.yaml and a file per benchmark
        accepted = _accepted_benchmarks(folder / "common.yaml") if (folder / "common.yaml").is_file() else []
        divisions.append(("", tuple(b for b in accepted if (folder / f"{b}.yaml").is_file())))
    rcp_folder = rcp_root() / folder.name
    rcps = tuple(sorted(p.stem.removeprefix("rcps_") for p in rcp_folder.glob("rcps_*.json")))
    return KnownRuleset(name, tuple(divisions), rcps, offline_rule=FACTS.get(name), rule_folders=(folder,))


@cache
def known_rulesets() -> dict[str, KnownRuleset]:
    """Every `training_X.Y.Z` ruleset of the installed mlperf-logging, oldest first."""
    found: list[tuple[tuple[int, ...], str, Path]] = []
    for folder in checker_root().iterdir():
        match = _FOLDER.match(folder.name)
        if match and folder.is_dir() and (folder / "common.yaml").is_file():
            version = tuple(int(g) for g in match.groups())
            found.append((version, ".".join(match.groups()), folder))
    loaded = [_load(folder, name) for _, name, folder in sorted(found)]
    newest_first = [k.rule_folders[0] for k in reversed(loaded)]
    return {
        k.name: replace(k, rule_folders=(k.rule_folders[0], *(f for f in newest_first if f != k.rule_folders[0])))
        for k in loaded
    }


@cache
def hpc_benchmarks() -> frozenset[str]:
    """MLPerf HPC's benchmarks as the installed mlperf-logging names them (its result-file counts), less any
    name a Training ruleset also uses: HPC usage is not covered yet (it has weak scaling and other rules)."""
    from mlperf_logging.benchmark_meta import get_result_file_counts

    training = {b for known in known_rulesets().values() for b in known.benchmarks}
    return frozenset(get_result_file_counts("hpc")) - training


def get_known(name: str) -> KnownRuleset:
    """The ruleset called `name`, or a clear error listing the installed ones (exit 2)."""
    known = known_rulesets()
    if name not in known:
        raise UnknownRulesetError(
            f"unknown ruleset {name!r}: the installed mlperf-logging ships training {', '.join(known)}"
        )
    return known[name]


def ruleset_for_run(
    flag: KnownRuleset | None,
    recorded: str | None,
    benchmark: str | None,
    division: str | None,
    *,
    lenient: bool = False,
) -> KnownRuleset:
    """The ruleset a run is replayed and scored under: the flag the user typed (looked up where it was typed),
    else the one recorded with the run (`import --ruleset`), else the recorder's own (6.1.0), looked up here:
    the one lookup on a run's path, whose result is passed on. It must know the run's benchmark: exit 2 when
    the user typed it, exit 1 when it comes from the data. `lenient`: a recorded ruleset that does not know
    the benchmark is still returned (the checker can judge the log as recorded; it says why it fails)."""
    if flag is not None:
        flag.require_benchmark(benchmark, division, typed=True)
        return flag
    name = recorded or rules.RULESET
    known = known_rulesets().get(name)
    if known is None:
        raise RulesetMismatchError(
            f"the run records ruleset {name!r}, which the installed mlperf-logging does not ship "
            f"(it ships training {', '.join(known_rulesets())}); pass --ruleset"
        )
    if lenient:
        return known
    try:
        known.require_benchmark(benchmark, division, typed=False)
    except RulesetMismatchError as e:
        hint = "" if recorded else " (the run records no ruleset: pass --ruleset, or import it with --ruleset)"
        raise RulesetMismatchError(f"{e}{hint}") from None
    return known
