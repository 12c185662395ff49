"""`recorder score` gives mlperf-logging's result summarizer's strong-scaling score of a result folder
(`_compute_strong_score_standalone`, scaling.json included), on the corpus's complete result sets and on
copies perturbed the ways real files are odd."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from mlperf_logging.result_summarizer.result_summarizer import _compute_strong_score_standalone

from recorder.adapters.mllog_import import import_file
from recorder.adapters.result_folder import read_result_folder
from replay.scorekeeping.score_runs import score_runs
from replay.scorekeeping.set_score import SetScore
from tests.helpers import run_in_process
from tests.replay.corpus_index import complete_result_sets

IBM_405B = "mlperf-results/training_results_v5.0/IBM+CoreWeave+NVIDIA/results/carina_ngpu512_ngc25.04_nemo/llama31_405b"


def _summarizer(folder: Path, ruleset: str) -> tuple[dict[str, float], float | None, float]:
    """Per-file minutes, score and scaling factor, from the summarizer itself."""
    tracked, _, score, _, factor = _compute_strong_score_standalone(
        folder.name, "system", False, str(folder), "training", ruleset, return_full_scores=True
    )
    return {Path(f).name: m for f, m in tracked.items()}, score, factor


def _ours(folder: Path, ruleset: str, root: Path) -> SetScore:
    result_folder = read_result_folder(folder)
    runs = [import_file(f, root, ruleset=ruleset, result_set=result_folder.result_set).run for f in result_folder.files]
    [result] = score_runs([r.path for r in runs], None, None, False)
    return result


def _assert_same(folder: Path, ruleset: str, root: Path) -> SetScore:
    tracked, theirs, factor = _summarizer(folder, ruleset)
    ours = _ours(folder, ruleset, root)
    assert ours.scaling_factor == factor
    counted = sorted(r.minutes for r in ours.runs if r.counted and r.minutes is not None)
    assert counted == sorted(tracked.values())
    if theirs is None:
        assert ours.score_minutes is None and not ours.scored
    else:
        assert ours.score_minutes == pytest.approx(theirs, rel=1e-9)
    return ours


def test_a_result_folder_scores_as_the_summarizer_scores_it_through_the_cli(corpus: Path, tmp_path: Path) -> None:
    folder = corpus / IBM_405B
    assert run_in_process("import", str(folder), "--root", str(tmp_path), "--ruleset", "5.0.0").returncode == 0
    result = run_in_process("score", *sorted(str(p) for p in tmp_path.iterdir()), "--format", "json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert set(payload) >= {
        "benchmark",
        "ruleset",
        "division",
        "runs",
        "olympic_minutes",
        "scaling_factor",
        "score_minutes",
        "scored",
        "reasons",
        "mlperf_logging",
    }
    assert set(payload["runs"][0]) >= {"run", "minutes", "status", "compliant", "reasons"}
    _, theirs, factor = _summarizer(folder, "5.0.0")
    assert payload["score_minutes"] == pytest.approx(theirs, rel=1e-9)
    assert payload["scaling_factor"] == factor == pytest.approx(1.1538461538461537)
    assert (payload["benchmark"], payload["ruleset"], payload["scored"]) == ("llama31_405b", "5.0.0", True)


def test_scaling_json_is_applied(corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "llama31_405b"
    shutil.copytree(corpus / IBM_405B, folder)
    (folder / "scaling.json").write_text('{"scaling_factor": 2.5}')
    scaled = _assert_same(folder, "5.0.0", tmp_path / "scaled")
    assert scaled.olympic_minutes is not None
    assert scaled.score_minutes == scaled.olympic_minutes * 2.5
    (folder / "scaling.json").unlink()
    plain = _assert_same(folder, "5.0.0", tmp_path / "plain")
    assert plain.scaling_factor == 1.0 and plain.score_minutes == scaled.olympic_minutes


@pytest.mark.slow
def test_every_complete_result_set_scores_as_the_summarizer_scores_it(corpus: Path, tmp_path: Path) -> None:
    sets = complete_result_sets(corpus)
    assert len(sets) == 5
    for i, (folder, ruleset) in enumerate(sets):
        assert _assert_same(folder, ruleset, tmp_path / str(i)).scored, folder


def _two_records_on_a_line(raw: bytes) -> bytes:
    """Interleaved ranks: a copy of the line before run_stop, then run_stop, on one line."""
    lines = raw.split(b"\n")
    at = next(i for i, ln in enumerate(lines) if b'"key": "run_stop"' in ln)
    lines[at] = b"0: " + lines[at - 1].rstrip(b"\r") + b" 1: " + lines[at]
    return b"\n".join(lines)


PERTURBATIONS: dict[str, Callable[[bytes], bytes]] = {
    "two records on a line": _two_records_on_a_line,
    "CR-only endings": lambda raw: raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r"),
    "a latin-1 byte in a noise line": lambda raw: b"node caf\xe9 ready\n" + raw,
    "a BOM": lambda raw: b"\xef\xbb\xbf" + raw,
    "a truncated last line": lambda raw: raw.rstrip(b"\r\n")[:-25],
}


@pytest.mark.parametrize("name", list(PERTURBATIONS))
def test_perturbed_files_give_the_summarizers_minutes(name: str, corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "llama31_405b"
    shutil.copytree(corpus / IBM_405B, folder)
    for f in folder.glob("result_*.txt"):
        f.write_bytes(PERTURBATIONS[name](f.read_bytes()))
    ours = _assert_same(folder, "5.0.0", tmp_path / "root")
    if name == "a truncated last line":  # the parser fails on the cut line: every run fails the checker
        assert not ours.scored and not any(r.compliant for r in ours.runs)
    else:
        assert ours.scored and all(r.compliant for r in ours.runs)


def test_a_folder_with_power_results_says_they_are_out_of_scope(corpus: Path) -> None:
    folder = corpus / "mlperf-results/training_results_v4.1/Dell/results/8xXE9680x8H100-SXM-80GB-POWER/llama2_70b_lora"
    found = read_result_folder(folder)
    assert [f.name for f in found.files] == ["result_0.txt"]
    assert found.notes == (f"{folder}/power: power results are out of scope; only the time-to-train score is imported",)
    assert found.result_set.scaling_factor == 1.0 and found.result_set.system == "8xXE9680x8H100-SXM-80GB-POWER"
