"""Logs the corpus does not hold, made by transforming corpus files: rulesets the
installed mlperf-logging ships that the corpus lacks, HPC logs, files that are not mllogs, empty and
compressed files, a run without run_stop, result folders of mixed benchmarks, benchmarks a ruleset does not
know. Each gives the summarizer's answer or a clear one-line error, never a traceback."""

from __future__ import annotations

import contextlib
import gzip
import io
import math
import re
import shutil
from pathlib import Path

from mlperf_logging.result_summarizer.result_summarizer import _compute_strong_score_standalone

from recorder.adapters.mllog_import import import_file
from recorder.adapters.result_folder import read_result_folder
from recorder.store.reader import read_run
from replay.checkers.check import compliance, compliance_file
from replay.derive import derive_run
from replay.rulesets import known_rulesets
from replay.scorekeeping.score_runs import score_runs
from tests.helpers import run_in_process
from tests.replay.corpus_index import corpus_logs

RESULTS = "mlperf-results/training_results_v"
BERT = RESULTS + "4.1/ASUSTeK/results/ESC_N8_E11/bert/result_1.txt"  # 4.1.0, closed, compliant
RESNET = RESULTS + "4.0/NVIDIA/results/eos_n8_ngc24.04_mxnet/resnet/result_0.txt"  # 4.0.0, closed, compliant
LORA = RESULTS + "5.1/AMD/results/MI355X_EPYC_9575F_pytorch/llama2_70b_lora/result_0.txt"  # 58 lines, 5.1.0
FLUX = RESULTS + "5.1/University-of-Florida/results/hpg.dgxb200x8.n9/flux1/result_0.txt"  # 5.1.0
_RUN_STOP_TIME = re.compile(r'("time_ms": )(\d+)(, "event_type": "INTERVAL_END", "key": "run_stop")')


def _later_stop(text: str, ms: int) -> str:
    """The log with its run_stop `ms` later: runs of one set with different minutes."""
    changed, n = _RUN_STOP_TIME.subn(lambda m: f"{m[1]}{int(m[2]) + ms}{m[3]}", text)
    assert n == 1
    return changed


def _result_set(folder: Path, source: Path, runs: int, *, drop_run_stop: int | None = None) -> Path:
    folder.mkdir(parents=True)
    text = source.read_text(encoding="latin-1")
    for i in range(runs):
        log = _later_stop(text, 61_000 * i)
        if i == drop_run_stop:
            log = "".join(ln for ln in log.splitlines(keepends=True) if '"key": "run_stop"' not in ln)
        (folder / f"result_{i}.txt").write_text(log, encoding="latin-1")
    return folder


def _summarizer(folder: Path, benchmark: str, ruleset: str) -> float | None:
    with contextlib.redirect_stdout(io.StringIO()):  # it prints a line per dropped run
        score = _compute_strong_score_standalone(benchmark, "sys", False, str(folder), "training", ruleset)[0]
    return None if score is None else float(score)


def _ours(folder: Path, root: Path, ruleset: str) -> tuple[float | None, list[str]]:
    found = read_result_folder(folder)
    runs = [import_file(f, root, None, ruleset, found.result_set).run.path for f in found.files]
    [result] = score_runs(runs, None, None, False)
    for run, f in zip(runs, found.files, strict=True):  # replay --check -i as-recorded: the checker's verdict
        derived = derive_run(read_run(run).events, ruleset, "as-recorded").text()
        assert compliance(derived, ruleset).summary() == compliance_file(f, ruleset).summary(), f
    return result.score_minutes, [r.status for r in result.runs]


def _same(ours: float | None, theirs: float | None) -> bool:
    return ours is None if theirs is None else ours is not None and math.isclose(ours, theirs, rel_tol=1e-9)


def test_rulesets_the_corpus_lacks_score_as_the_summarizer(corpus: Path, tmp_path: Path) -> None:
    in_corpus = {ruleset for _, ruleset in corpus_logs(corpus)}
    missing = [k for name, k in known_rulesets().items() if name not in in_corpus]
    assert {"1.0.0", "2.1.0", "3.1.0"} <= {k.name for k in missing}  # mlperf-logging 4.1.68: 0.6.0 to 3.1.0
    unscored = []
    for known in missing:
        benchmark = "bert" if "bert" in known.benchmarks else "resnet"
        folder = _result_set(tmp_path / known.name / benchmark, corpus / (BERT if benchmark == "bert" else RESNET), 3)
        theirs = _summarizer(folder, benchmark, known.name)
        ours, _ = _ours(folder, tmp_path / known.name / "runs", known.name)
        assert _same(ours, theirs), (known.name, ours, theirs)
        if theirs is None:
            unscored.append(known.name)
    # 0.6.0's parser reads another line format (':::MLPv0.5.0'): neither it nor we score these logs under it
    assert unscored == ["0.6.0"]


def test_a_run_without_run_stop_is_dropped_as_the_summarizer_drops_it(corpus: Path, tmp_path: Path) -> None:
    folder = _result_set(tmp_path / "sys" / "llama2_70b_lora", corpus / LORA, 3, drop_run_stop=1)
    ours, statuses = _ours(folder, tmp_path / "runs", "5.1.0")
    assert statuses == ["success", "none", "success"]
    theirs = _summarizer(folder, "llama2_70b_lora", "5.1.0")
    assert theirs is not None and _same(ours, theirs)


def _clean_error(result, code: int, *needles: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    flat = " ".join(result.stderr.split())
    assert flat.startswith("error: ") and len(result.stderr.strip().splitlines()) <= 3, result.stderr
    for needle in needles:
        assert needle in flat, result.stderr


def test_files_that_are_not_mllogs_are_refused_before_anything_is_recorded(corpus: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    # Prose that mentions ':::MLLOG' and shows it without a record, as a README does.
    readme = tmp_path / "README.md"
    readme.write_text("# Notes\n\nEach line of a log starts with `:::MLLOG` and a JSON record:\n\n    :::MLLOG ...\n")
    _clean_error(
        run_in_process("import", str(readme), "--root", str(root)), 2, f"{readme}: not an mllog", "no :::MLLOG line"
    )
    empty = tmp_path / "result_0.txt"
    empty.write_bytes(b"")
    _clean_error(run_in_process("import", str(empty), "--root", str(root)), 2, f"{empty}: empty file")
    packed = tmp_path / "result_1.txt.gz"
    packed.write_bytes(gzip.compress((corpus / LORA).read_bytes()))
    _clean_error(run_in_process("import", str(packed), "--root", str(root)), 2, f"{packed}: gzip-compressed", "gunzip")
    folder = tmp_path / "results" / "sys" / "llama2_70b_lora"
    folder.mkdir(parents=True)
    shutil.copy(packed, folder / "result_0.txt.gz")
    _clean_error(
        run_in_process("import", str(folder), "--root", str(root)), 2, "only compressed files (result_0.txt.gz)"
    )
    hpc = tmp_path / "deepcam.txt"
    hpc.write_text((corpus / LORA).read_text().replace('"value": "llama2_70b_lora"', '"value": "deepcam"'))
    _clean_error(run_in_process("import", str(hpc), "--root", str(root)), 2, "HPC not supported", "'deepcam'")
    assert not root.exists() or not any(root.iterdir())


def test_a_result_folder_of_two_benchmarks_is_refused_whole(corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "results" / "sys" / "bert"
    folder.mkdir(parents=True)
    shutil.copy(corpus / BERT, folder / "result_0.txt")
    shutil.copy(corpus / RESNET, folder / "result_1.txt")
    root = tmp_path / "runs"
    _clean_error(
        run_in_process("import", str(folder), "--root", str(root)),
        2,
        "state different benchmarks (result_0.txt: bert, result_1.txt: resnet)",
    )
    assert not root.exists()


def test_a_benchmark_the_ruleset_does_not_know(corpus: Path, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    # flux1 is a 5.1.0 benchmark: imported under 4.0.0 it is kept (a warning), and score says why it refuses
    imported = run_in_process(
        "import", str(corpus / FLUX), "--root", str(root), "--run-id", "flux", "--ruleset", "4.0.0"
    )
    assert imported.returncode == 0 and "benchmark 'flux1' is not in training 4.0.0" in " ".join(
        imported.stdout.split()
    )
    _clean_error(run_in_process("score", str(root / "flux")), 1, "benchmark 'flux1' is not in training 4.0.0", "bert")
    # a benchmark no ruleset knows, imported without --ruleset: scored under 6.1.0, which refuses it (exit 1)
    unknown = tmp_path / "result_0.txt"
    unknown.write_text((corpus / LORA).read_text().replace('"value": "llama2_70b_lora"', '"value": "tinyllm"'))
    assert run_in_process("import", str(unknown), "--root", str(root), "--run-id", "tiny").returncode == 0
    _clean_error(run_in_process("score", str(root / "tiny")), 1, "benchmark 'tinyllm' is not in training 6.1.0")
