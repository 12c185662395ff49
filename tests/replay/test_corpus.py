"""Every file in ../shared/corpus holding ':::MLLOG' imports; as-recorded reproduces its lines; our minutes
equal the result summarizer's wherever it can compute them, and where it cannot we say why; `recorder score`
on the 18 qwen35 reference logs scores each GBS group as the summarizer would (not at all: every run fails
the 6.1.0 checker), with the checker's verdict and reasons."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from mlperf_logging.compliance_checker.mlp_parser import parse_file
from mlperf_logging.result_summarizer.result_summarizer import _query_mlperf_strong_scaling_score

from recorder.adapters.mllog_import import import_file
from recorder.store.reader import read_run
from replay.derive import derive_run
from tests.helpers import run_cli


def _mllog_files(corpus: Path) -> list[Path]:
    """Files holding at least one record (the corpus README only mentions ':::MLLOG': import refuses it)."""
    out = subprocess.run(["grep", "-rl", ":::MLLOG {", str(corpus)], capture_output=True, text=True, check=True)
    return sorted(Path(p) for p in out.stdout.split())


def _grep_lines(path: Path) -> list[str]:
    """`grep ':::MLLOG' FILE` with CRLF line endings stripped (what as-recorded promises)."""
    return [
        ln[:-1] if ln.endswith("\r") else ln for ln in path.read_text(encoding="utf-8").split("\n") if ":::MLLOG" in ln
    ]


def _summarizer_minutes(path: Path) -> tuple[float | None, str]:
    """The result summarizer's minutes (its parser + `_query_mlperf_strong_scaling_score`), or why not."""
    try:
        loglines, _ = parse_file(str(path), ruleset="6.1.0")
    except KeyError as e:  # its parser indexes m['time_ms'] and crashes on a line without it
        return None, f"parser: KeyError {e}"
    try:
        return _query_mlperf_strong_scaling_score(loglines), ""
    except ValueError as e:
        return None, str(e)


# A fast sample of what real logs do: CRLF endings, rank prefixes, :::SYSJSON lines, no time_ms,
# no run_start (a power log), a 6.1.0 reference log.
SAMPLE = (
    "qwen35_397b_grpo_rcp/GBS512/seed_3.out",
    "mlperf-results/training_results_v5.1/Wiwynn/results/1xKinabalux18x4GB200/llama2_70b_lora/result_0.txt",
    "mlperf-results/training_results_v5.1/GigaComputing/results/G894-AD1_hugectr/dlrm_dcnv2/result_0.txt",
    "mlperf-results/training_results_v5.1/Lenovo/results/SR680aV3-8xB200_SXM_180GB/retinanet/result_01.txt",
    "mlperf-results/training/llm_moe_pretraining/nemo/rcp_logs/15360/seed_1.out",
    "mlperf-results/training_results_v4.1/Dell/results/8xXE9680x8H100-SXM-80GB-POWER/llama2_70b_lora/power/"
    "result_0/node_0.txt",
)


def _check_round_trip(paths: list[Path], root: Path) -> tuple[int, int]:
    compared = uncomputable = 0
    for path in paths:
        report = import_file(path, root)
        d = derive_run(read_run(report.run).events, "6.1.0", "as-recorded")
        assert list(d.lines) == _grep_lines(path), path
        assert report.lines == len(d.lines)
        theirs, why_not = _summarizer_minutes(path)
        if theirs is not None:
            compared += 1
            assert d.minutes == theirs, path
        else:
            uncomputable += 1
            assert d.minutes is None, (path, why_not, d.minutes)
            assert d.why.startswith("no minutes: "), (path, d.why)
            if "time_ms" in why_not:
                assert "time_ms" in d.why
            else:
                assert re.search(r"no (run_start|run_stop) line", d.why), (path, d.why)
    return compared, uncomputable


def test_corpus_sample_imports_and_replays_as_recorded(corpus: Path, tmp_path: Path) -> None:
    assert _check_round_trip([corpus / p for p in SAMPLE], tmp_path) == (4, 2)


@pytest.mark.slow
def test_every_corpus_log_imports_and_replays_as_recorded(corpus: Path, tmp_path: Path) -> None:
    files = _mllog_files(corpus)
    assert len(files) == 94
    compared, uncomputable = _check_round_trip(files, tmp_path)
    assert (compared, uncomputable) == (90, 4)


def test_malformed_and_prefixed_lines_are_kept(corpus: Path, tmp_path: Path) -> None:
    # A real log with the corpus README appended: its prose mentions ':::MLLOG' on a line that is not JSON.
    mixed = tmp_path / "mixed.txt"
    mixed.write_text((corpus / SAMPLE[0]).read_text() + (corpus / "README.md").read_text())
    report = import_file(mixed, tmp_path / "runs")
    assert [n for n, _ in report.malformed] == [
        n for n, ln in enumerate(mixed.read_text().split("\n"), 1) if ":::MLLOG" in ln and ":::MLLOG {" not in ln
    ]
    assert report.malformed
    events = read_run(report.run).events
    bad = [e for e in events if e.kind == "mllog_line" and e.data.get("error")]
    assert len(bad) == len(report.malformed)
    assert bad[0].data["error"].startswith("malformed JSON") and bad[0].key is None


def test_score_the_18_reference_logs(corpus: Path, tmp_path: Path) -> None:
    logs = sorted((corpus / "qwen35_397b_grpo_rcp").glob("GBS*/seed_*.out"))
    assert len(logs) == 18
    assert run_cli("import", *map(str, logs), "--root", str(tmp_path)).returncode == 0
    runs = sorted(str(p) for p in tmp_path.iterdir())
    result = run_cli("score", *runs, "--ruleset", "6.1.0")
    out = result.stdout
    assert result.returncode == 1, out  # no set scores (every run fails the checker): exit 1, after printing all
    for gbs in (256, 512, 1024):
        assert f"GBS {gbs}: qwen35_397b_grpo, training 6.1.0, closed division, 6 runs" in out
    assert out.count("(not scored)") == 3
    assert "mlperf-logging 4.1.68" in out
    flat = " ".join(out.split())
    for reason in (
        "'lowest_numerical_precision_in_linear' but found 0",
        "'config_filename' but found 0",
        "v['value'] == 251",
        "6 of 6 runs dropped (non-compliant, or no run_start/run_stop) and the summarizer allows 1",
    ):
        assert reason in flat
    assert flat.count("6 of 6 runs fail the compliance checker") == 3
