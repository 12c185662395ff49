"""Parse at the edge: on replay's path a ruleset's name becomes a `KnownRuleset` once, where it enters (the
request's `--ruleset`, else the run's recorded ruleset), and that value is passed on to the scores, the
derivation and the offline rule's facts; none of them looks it up again. Every lookup reads the installed
rulesets through `replay.rulesets.known_rulesets`, so counting its calls counts the lookups."""

from __future__ import annotations

from pathlib import Path

import pytest

import replay.rulesets
from replay.run_replay import ReplayRequest, replay_run
from tests.replay.runs import CASES, record_run


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


def test_the_count_sees_a_second_lookup(tmp_path: Path, lookups: list[int]) -> None:
    replay.rulesets.get_known("6.1.0")
    replay.rulesets.get_known("6.1.0")
    assert len(lookups) == 2
