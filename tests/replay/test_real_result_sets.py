"""Real result folders of every benchmark kind, rounds 2.1 to 5.1 (tests/fixtures/mlperf_results): each scores
as mlperf-logging's result summarizer scores it, dict-valued accuracies (maskrcnn's BBOX and SEGM)
included, and no value check refuses a line the checker reads as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replay.recorded_types import first_type_problem
from replay.rulesets import get_known
from tests.replay.corpus_index import FIXTURE_RESULTS, corpus_logs, fixture_result_sets
from tests.replay.test_summarizer_score import _assert_same

# maskrcnn, training 3.0: eval_accuracy is {"BBOX": ..., "SEGM": ...}; the summarizer gives 19.24 minutes
MASKRCNN = FIXTURE_RESULTS / "training_results_v3.0/GIGABYTE/results/G593-SD0_pytorch/maskrcnn"


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def test_the_fixture_holds_every_benchmark_kind() -> None:
    kinds = {folder.name for folder, _ in fixture_result_sets()}
    assert kinds >= {
        "bert", "dlrm", "dlrm_dcnv2", "gnn", "gpt3", "llama2_70b_lora", "llama31_8b", "maskrcnn", "resnet",
        "retinanet", "rgat", "rnnt", "ssd", "stable_diffusion", "unet3d",
    }  # fmt: skip
    assert {ruleset for _, ruleset in fixture_result_sets()} == {
        f"{v}.0" for v in ("2.1", "3.0", "3.1", "4.0", "4.1", "5.0", "5.1")
    }


def test_a_maskrcnn_set_with_dict_valued_accuracies_scores_as_the_summarizer_scores_it(tmp_path: Path) -> None:
    ours = _assert_same(MASKRCNN, "3.0.0", tmp_path)
    assert ours.scored and ours.score_minutes == pytest.approx(19.2437, abs=1e-4)
    assert sum(r.compliant for r in ours.runs) == 5


def test_no_value_check_refuses_a_real_log() -> None:
    """Every result file of the fixture and of ../shared/corpus, under its own ruleset."""
    files = [(f, ruleset) for folder, ruleset in fixture_result_sets() for f in sorted(folder.glob("result_*.txt"))]
    assert len(files) > 200
    for path, ruleset in files:
        assert first_type_problem(_lines(path), get_known(ruleset)) is None, path


def test_no_value_check_refuses_a_corpus_log(corpus: Path) -> None:
    for path, ruleset in corpus_logs(corpus):
        assert first_type_problem(_lines(path), get_known(ruleset)) is None, path


def test_a_dict_valued_accuracy_is_held_to_numbers() -> None:
    """The checker compares `v['value']['BBOX'] >= 0.377`: `true` there would be read as 1."""
    lines = _lines(MASKRCNN / "result_0.txt")
    forged = [re.sub(r'"BBOX": [0-9.e-]+', '"BBOX": true', ln) if '"eval_accuracy"' in ln else ln for ln in lines]
    why = first_type_problem(forged, get_known("3.0.0"))
    assert why is not None and re.fullmatch(r"line \d+: eval_accuracy BBOX true is not a finite number", why), why
    plain = [re.sub(r'"value": \{[^}]*\}', '"value": 0.5', ln) if '"eval_accuracy"' in ln else ln for ln in lines]
    why = first_type_problem(plain, get_known("3.0.0"))
    assert why is not None and "eval_accuracy 0.5 is not an object of BBOX, SEGM" in why, why


def test_a_dict_valued_accuracy_is_no_number_elsewhere() -> None:
    """A benchmark whose rule file compares the accuracy itself does not take a dict."""
    lines = _lines(FIXTURE_RESULTS / "training_results_v3.0/Intel/results/16-nodes-SPR-pytorch/ssd/result_0.txt")
    forged = [
        re.sub(r'"value": [0-9.e-]+', '"value": {"BBOX": 0.9}', ln) if '"eval_accuracy"' in ln else ln for ln in lines
    ]
    why = first_type_problem(forged, get_known("3.0.0"))
    assert why is not None and 'eval_accuracy {"BBOX": 0.9} is not a finite number' in why, why


@pytest.mark.slow
@pytest.mark.parametrize("folder,ruleset", fixture_result_sets(), ids=lambda v: str(v).split("results/")[-1])
def test_every_real_set_scores_as_the_summarizer_scores_it(folder: Path, ruleset: str, tmp_path: Path) -> None:
    _assert_same(folder, ruleset, tmp_path)
