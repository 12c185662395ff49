"""Parse at the edge: on replay's path a ruleset's name becomes a `KnownRuleset` once, where it enters (the
request's `--ruleset`, else the run's recorded ruleset), and that value is passed on to the scores, the
derivation, the offline rule's facts, the accuracy shapes and the checker; none of them looks it up again,
on a native run's path or an imported log's. Every lookup reads the installed rulesets through
`replay.rulesets.known_rulesets`, and no other module holds that function under its own name, so counting
its calls counts the lookups."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import replay.rulesets
from recorder.adapters.mllog_import import import_file
from replay.ruleset_facts import FACTS
from replay.run_replay import ReplayRequest, replay_run
from tests.replay.corpus_index import FIXTURE_RESULTS
from tests.replay.runs import CASES, record_run

REPO = Path(__file__).resolve().parents[2]
# an imported result of training 3.0.0 whose accuracy the checker reads as a dict (BBOX, SEGM): its shape
# is read from the ruleset's rule files on the as-recorded path
IMPORTED = FIXTURE_RESULTS / "training_results_v3.0/GIGABYTE/results/G593-SD0_pytorch/maskrcnn/result_0.txt"


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = replay.rulesets.known_rulesets

    def counted() -> dict[str, replay.rulesets.KnownRuleset]:
        calls.append(1)
        return real()

    monkeypatch.setattr(replay.rulesets, "known_rulesets", counted)
    return calls


@pytest.mark.parametrize(
    "asked",
    [{}, {"ruleset": "6.1.0"}, {"compare": True}, {"interpretation": "checker-order"}],
    ids=["the run's own", "typed", "compare", "another interpretation"],
)
def test_replay_looks_a_ruleset_up_once(tmp_path: Path, lookups: list[int], asked: dict[str, object]) -> None:
    run = record_run(tmp_path, "once", **CASES["later_pass"])  # type: ignore[arg-type]
    lookups.clear()
    result = replay_run(ReplayRequest(run.path, **asked))  # type: ignore[arg-type]
    assert result.refused is None and result.ruleset == "6.1.0"
    assert len(result.rows) > 1  # every interpretation's row was derived under the one value
    assert len(lookups) == 1


@pytest.mark.parametrize(
    "asked",
    [{}, {"ruleset": "3.0.0"}, {"check": True}, {"compare": True}],
    ids=["the log's own", "typed", "checked", "compare"],
)
def test_an_imported_log_looks_its_ruleset_up_once(
    tmp_path: Path, lookups: list[int], asked: dict[str, object]
) -> None:
    run = import_file(IMPORTED, tmp_path, ruleset="3.0.0").run
    lookups.clear()
    result = replay_run(ReplayRequest(run.path, **asked))  # type: ignore[arg-type]
    assert result.refused is None and result.ruleset == "3.0.0"
    assert result.rows or result.derivation is not None
    assert len(lookups) == 1


def test_only_the_rulesets_module_names_the_lookup() -> None:
    """A module that imported `known_rulesets` by name would look rulesets up unseen by the count above."""
    holders = []
    for folder in ("recorder", "replay", "trainer", "evaluator"):
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and any(a.name == "known_rulesets" for a in node.names):
                    holders.append(str(path.relative_to(REPO)))
    assert holders == []


def parameters_named(name: str, source: str) -> list[str]:
    """The functions in `source` that take a parameter called `name`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            if any(a is not None and a.arg == name for a in every):
                found.append(getattr(node, "name", "lambda"))
    return found


def test_no_parameter_named_rules_holds_a_rulesets_facts() -> None:
    """`rules` is the module recorder.rules; a ruleset's facts travel as `facts`."""
    named = {
        str(path.relative_to(REPO)): parameters_named("rules", path.read_text(encoding="utf-8"))
        for folder in ("recorder", "replay", "trainer", "evaluator")
        for path in sorted((REPO / folder).rglob("*.py"))
    }
    assert {path: names for path, names in named.items() if names} == {}
    assert parameters_named("rules", "def render(tl, rules, plan): ...") == ["render"]


def test_the_count_sees_a_second_lookup(tmp_path: Path, lookups: list[int]) -> None:
    replay.rulesets.get_known("6.1.0")
    replay.rulesets.get_known("6.1.0")
    assert len(lookups) == 2


def test_each_ruleset_states_its_own_facts() -> None:
    """A row of FACTS is its own version's (its key), and a ruleset without a row has no offline rule: no
    ruleset is given another's facts."""
    known = replay.rulesets.known_rulesets()
    for version, facts in FACTS.items():
        assert facts.ruleset == version and version in known
        assert known[version].offline_evaluation(facts.benchmark)
    without = [k for k in known.values() if k.name not in FACTS]
    assert without and not any(k.offline_evaluation(f.benchmark) for k in without for f in FACTS.values())
