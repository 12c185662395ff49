"""The real mlperf-logging checkers on derived logs of synthetic closed-division runs (6.1.0 hyperparameters,
GBS 256: the validation start is step 18, samples 4608)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from mlperf_logging.mllog.mllog import _encode_log

from recorder.store.reader import read_run
from replay.checkers.check import compliance, mlperf_logging_version, rcp
from replay.derive import derive_run
from replay.mllog_format import encode_line
from replay.ruleset_facts import FACTS
from replay.rulesets import checker_root
from tests.replay.runs import record_run


def _closed(root: Path, run_id: str, evals: list[tuple[int, float]], reverse_configs: bool = False) -> list:  # type: ignore[type-arg]
    return read_run(
        record_run(
            root,
            run_id,
            gbs=256,
            steps=20,
            closed=True,
            evals=evals,
            eval_start_s=1300,
            reverse_configs=reverse_configs,
        )
    ).events


def _checker_cli(path: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mlperf_logging.compliance_checker",
            "--usage",
            "training",
            "--ruleset",
            "6.1.0",
            "--log_output",
            str(tmp / "cc.log"),
            str(path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp,
    )


def test_official_log_passes_the_compliance_checker_cli_and_the_rcp_checker(tmp_path: Path) -> None:
    d = derive_run(_closed(tmp_path, "closed", [(18, 0.72)]), "6.1.0", "official")
    log = tmp_path / "result_0.txt"
    log.write_text(d.text())
    cli = _checker_cli(log, tmp_path)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "SUCCESS" in cli.stdout + cli.stderr
    assert compliance(d.text()).ok
    r = rcp([d.text()])
    assert r.ok, r.summary()
    assert r.mlperf_logging == mlperf_logging_version() == "4.1.68"


def test_configuration_keys_follow_the_checkers_order_whatever_the_recorded_order(tmp_path: Path) -> None:
    """The checker reads num_prompts_per_step before num_generations_per_prompt, global_batch_size before
    the learning rate; a trainer that recorded them the other way round still gets a passing log."""
    d = derive_run(_closed(tmp_path, "reversed", [(18, 0.72)], reverse_configs=True), "6.1.0", "official")
    assert compliance(d.text()).ok


def test_skipping_the_validation_start_fails_official_and_passes_checker_order(tmp_path: Path) -> None:
    """Evaluated in the order 19 (passes), 18, 20: the rule allows any order; the closed checker wants the
    first eval_accuracy at samples 4608 (step 18)."""
    events = _closed(tmp_path, "skip", [(19, 0.72), (18, 0.70), (20, 0.71)])
    official = derive_run(events, "6.1.0", "official")
    ordered = derive_run(events, "6.1.0", "checker-order")
    (tmp_path / "official.txt").write_text(official.text())
    (tmp_path / "checker-order.txt").write_text(ordered.text())
    failed = _checker_cli(tmp_path / "official.txt", tmp_path)
    assert failed.returncode == 1
    assert "v['metadata']['samples_count'] == s['next_validation_samples']" in failed.stdout + failed.stderr
    assert _checker_cli(tmp_path / "checker-order.txt", tmp_path).returncode == 0
    assert (official.passing_step, ordered.passing_step) == (19, 18)
    result = compliance(official.text())
    assert not result.ok and any("next_validation_samples" in r for r in result.reasons)


def test_nemo_rl_ge_at_exactly_the_target_fails_the_checker(tmp_path: Path) -> None:
    """Step 18 scores exactly 0.69: NeMo-RL's reference evaluator (>=) stops there; the checker demands > 0.69."""
    events = _closed(tmp_path, "ge", [(18, 0.69), (19, 0.72)])
    ge = derive_run(events, "6.1.0", "nemo-rl-ge")
    official = derive_run(events, "6.1.0", "official")
    assert (ge.passing_step, official.passing_step) == (18, 19)
    result = compliance(ge.text())
    assert not result.ok
    assert any("v['value'] > s['target_accuracy']" in r for r in result.reasons)
    assert compliance(official.text()).ok


@pytest.mark.parametrize("version", sorted(FACTS))
def test_required_keys_match_the_checker_yaml(version: str) -> None:
    """Each ruleset's required keys (replay.ruleset_facts) are the EXACTLY_ONE keys of the installed checker's
    files of that version (minus run events)."""
    rules = FACTS[version]
    folder = checker_root() / f"training_{version}"

    def exactly_one(name: str) -> set[str]:
        entries = yaml.safe_load((folder / name).read_text())
        return {e["KEY"]["NAME"] for e in entries if "KEY" in e and e["KEY"].get("REQ") == "EXACTLY_ONE"}

    events = {"init_stop", "run_start", "run_stop"}
    assert rules.ruleset == version
    for division in ("closed", "open"):
        expected = (
            exactly_one("common.yaml")
            | exactly_one(f"{division}_common.yaml")
            | exactly_one(f"{division}_{rules.benchmark}.yaml")
        ) - events
        assert set(rules.required_keys(division)) == expected, division


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    time_ms=st.integers(0, 2**45),
    key=st.text(max_size=12),
    value=json_values,
    meta=st.dictionaries(st.text(max_size=6), json_values, max_size=3),
    event_type=st.sampled_from(["POINT_IN_TIME", "INTERVAL_START", "INTERVAL_END"]),
)
def test_line_format_is_mlperf_loggings_own(
    time_ms: int, key: str, value: object, meta: dict[str, object], event_type: str
) -> None:
    assert encode_line(time_ms, event_type, key, value, meta) == _encode_log("", time_ms, event_type, key, value, meta)


@pytest.mark.parametrize("gbs,start", [(256, 18), (512, 10), (1024, 7), (3840, 4), (128, 33)])
def test_validation_start(gbs: int, start: int) -> None:
    assert FACTS["6.1.0"].validation_start_step(gbs) == start
