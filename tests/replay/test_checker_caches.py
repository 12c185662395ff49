"""The checkers' rule files and RCP data are prepared once per process (replay/checkers/checker_configs.py,
replay/checkers/rcp_data.py): the verdicts and messages stay exactly those of mlperf-logging's own checkers run as
they ship, an edited rule file is read again, and nothing one log's check changes reaches the next."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import yaml
from mlperf_logging.compliance_checker import mlp_compliance
from mlperf_logging.rcp_checker import rcp_checker

from replay.checkers.check import _reason, compliance_file, rcp
from replay.checkers.checker_configs import _ParsedOnce

# passed, failed (closed 4.1.0 bert), and the checker raising (a reference log without time_ms)
LOGS = (
    (
        "mlperf-results/training_results_v5.1/AMD/results/MI355X_EPYC_9575F_pytorch/llama2_70b_lora/result_0.txt",
        "5.1.0",
    ),
    ("mlperf-results/training_results_v4.1/ASUSTeK/results/ESC_N8_E11/bert/result_1.txt", "4.1.0"),
    ("mlperf-results/training/llm_moe_pretraining/nemo/rcp_logs/15360/seed_1.out", "6.0.0"),
)


def _uncached(path: Path, ruleset: str) -> tuple[bool, list[str]] | str:
    """mlperf-logging's checker exactly as `python -m mlperf_logging.compliance_checker` runs it."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    del mlp_compliance.enqueued_configs[:]
    checker = mlp_compliance.make_checker("training", ruleset, False, False)
    try:
        valid, *_ = mlp_compliance.main(str(path), f"training_{ruleset}/common.yaml", checker)
    except Exception as e:
        del mlp_compliance.enqueued_configs[:]
        return f"{type(e).__name__}: {e}"
    finally:
        logging.disable(previous)
    return bool(valid), [*checker.not_overwritable, *checker.overwritable.values()]


def test_cached_rule_files_give_the_checkers_own_messages(corpus: Path) -> None:
    for rel, ruleset in LOGS:
        theirs = _uncached(corpus / rel, ruleset)
        for _ in range(2):  # the first call parses the rule files, the second reuses them
            ours = compliance_file(corpus / rel, ruleset)
            if isinstance(theirs, str):
                assert ours.error == f"checker error: {theirs}", rel
            else:
                assert (ours.ok, ours.reasons) == (theirs[0], tuple(_reason(m) for m in theirs[1])), rel
    assert mlp_compliance.yaml is yaml  # the real module is back once the check is over


def test_an_edited_rule_file_is_parsed_again_and_copies_are_independent(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("- KEY:\n    NAME: a\n    REQ: EXACTLY_ONE\n")
    loader = _ParsedOnce()
    with open(rules) as f:
        first = loader.load(f, Loader=yaml.BaseLoader)
    first[0]["KEY"]["REQ"] = "changed by a rule's code"
    with open(rules) as f:
        assert loader.load(f, Loader=yaml.BaseLoader) == [{"KEY": {"NAME": "a", "REQ": "EXACTLY_ONE"}}]
    rules.write_text("- KEY:\n    NAME: b\n")  # another size: parsed again
    with open(rules) as f:
        assert loader.load(f, Loader=yaml.BaseLoader) == [{"KEY": {"NAME": "b"}}]


def test_prepared_rcp_data_gives_the_rcp_checkers_own_verdict(corpus: Path, tmp_path: Path) -> None:
    folder = corpus / "mlperf-results/training_results_v5.1/AMD/results/MI355X_EPYC_9575F_pytorch/llama2_70b_lora"
    files = sorted(folder.glob("result_*.txt"))
    copy = tmp_path / "set"
    copy.mkdir()
    for f in files:
        shutil.copy(f, copy / f.name)
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        ok, message, _ = rcp_checker.check_directory(
            str(copy), "training", "5.1.0", False, False, rcp_pass="pruned_rcps"
        )
    finally:
        logging.disable(previous)
    texts = [f.read_text(encoding="latin-1") for f in files]
    for _ in range(2):
        ours = rcp(texts, "5.1.0")
        assert (ours.ok, ours.reasons[0]) == (ok, message)
    assert isinstance(rcp_checker.RCP_Checker, type)  # the real class is back
