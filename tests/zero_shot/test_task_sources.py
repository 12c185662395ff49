"""Where the tasks' data come from: Winogrande from winogrande_debiased and SIQA from jet-ai/social_i_qa by
default (the team's sources), any other hub dataset by --task-source TASK=PATH[:CONFIG]."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.task_sources import HubDataset, parse_sources, resolve_task_data
from tests.kit.datasets_cache import make_cache

pytest.importorskip("datasets")


def test_the_default_sources_and_an_override(tmp_path: Path) -> None:
    cache = make_cache(tmp_path / "hf")
    found = resolve_task_data(["winogrande", "social_iqa"], hf_cache=cache, data_dir=None)
    assert [t.data for t in found] == [
        cache / "allenai/winogrande/winogrande_debiased/validation",
        cache / "jet-ai/social_i_qa/validation",
    ]
    shutil.move(cache / "jet-ai/social_i_qa", tmp_path / "moved")
    (cache / "lighteval").mkdir()
    shutil.move(tmp_path / "moved", cache / "lighteval/siqa")
    with pytest.raises(ZeroShotInputError, match="social_iqa: put it at .*jet-ai/social_i_qa/validation"):
        resolve_task_data(["social_iqa"], hf_cache=cache, data_dir=None)
    sources = parse_sources("siqa=lighteval/siqa, winogrande=allenai/winogrande:winogrande_debiased")
    assert sources["social_iqa"] == HubDataset("lighteval/siqa", None, "validation")
    [siqa] = resolve_task_data(["social_iqa"], hf_cache=cache, data_dir=None, sources=sources)
    assert siqa.data == cache / "lighteval/siqa/validation"


@pytest.mark.parametrize("text", ["bogus=a/b", "piqa", "winogrande="])
def test_a_source_that_is_not_task_equals_path_is_refused(text: str) -> None:
    with pytest.raises(ZeroShotInputError, match="expected TASK=PATH"):
        parse_sources(text)
