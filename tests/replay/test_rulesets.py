"""Rulesets are discovered from the installed mlperf-logging, and `replay --check -i as-recorded` under a log's
own ruleset gives mlperf-logging's compliance checker's own verdict on the original file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recorder.adapters.mllog_import import import_file
from recorder.store.reader import read_run
from replay.checkers.check import compliance, compliance_file
from replay.derive import derive_run
from replay.rulesets import checker_root, get_known, known_rulesets
from tests.helpers import run_in_process
from tests.replay.corpus_index import corpus_logs

# One log per ruleset and per kind of verdict (passed, failed, the checker raising), fast enough for the
# default tier; the slow test goes over every file.
SAMPLE = (
    "mlperf-results/training_results_v4.0/NVIDIA/results/eos_n8_ngc24.04_mxnet/resnet/result_0.txt",
    "mlperf-results/training_results_v4.1/ASUSTeK/results/ESC_N8_E11/bert/result_1.txt",
    "mlperf-results/training_results_v4.1/Dell/results/8xXE9680x8H100-SXM-80GB-POWER/llama2_70b_lora/power/"
    "result_0/node_0.txt",
    "mlperf-results/training_results_v5.0/tinycorp/results/tinybox_red/bert/result_0.txt",
    "mlperf-results/training_results_v5.1/Lenovo/results/SR680aV3-8xB200_SXM_180GB/retinanet/result_01.txt",
    "mlperf-results/training_results_v6.0/AMD/results/MI355X_EPYC_9575F_primus/llama2_70b_lora/result_0.txt",
    "mlperf-results/training/llm_moe_pretraining/nemo/rcp_logs/15360/seed_1.out",
    "qwen35_397b_grpo_rcp/GBS512/seed_3.out",
)


def test_rulesets_are_the_installed_checkers_folders() -> None:
    folders = sorted(p.name for p in checker_root().iterdir() if re.fullmatch(r"training_\d+\.\d+\.\d+", p.name))
    assert [f"training_{name}" for name in known_rulesets()] == sorted(folders, key=lambda f: f.split("_")[1])
    # mlperf-logging 4.1.68 ships 0.6.0 ... 6.1.0; these rulesets, at least, are among them
    assert {"2.1.0", "3.0.0", "3.1.0", "4.0.0", "4.1.0", "5.0.0", "5.1.0", "6.0.0", "6.1.0"} <= set(known_rulesets())


def test_a_rulesets_benchmarks_are_what_its_checker_accepts_and_can_load() -> None:
    r41 = get_known("4.1.0")
    closed = r41.benchmarks_of("closed")
    assert "llama2_70b_lora" in closed and "gpt3" in closed
    # 4.1.0's CHECK still lists resnet, but the checker has no closed_resnet.yaml to load: not checkable
    assert "resnet" not in closed
    assert "llama2_70b_lora" not in get_known("4.0.0").benchmarks_of("open")  # divisions differ
    for known in known_rulesets().values():
        for division, benchmarks in known.divisions:
            prefix = f"{division}_" if division else ""
            for b in benchmarks:
                assert (checker_root() / f"training_{known.name}" / f"{prefix}{b}.yaml").is_file()
    assert get_known("6.1.0").offline_evaluation("qwen35_397b_grpo")
    assert not get_known("6.1.0").offline_evaluation("llama2_70b_lora")
    assert get_known("5.1.0").has_rcps("llama2_70b_lora") and not get_known("5.1.0").has_rcps("qwen35_397b_grpo")


def _both_verdicts(path: Path, ruleset: str, root: Path) -> tuple[str, str]:
    theirs = compliance_file(path, ruleset)
    run = import_file(path, root, ruleset=ruleset).run
    ours = compliance(derive_run(read_run(run).events, ruleset, "as-recorded").text(), ruleset)
    return theirs.summary(), ours.summary()


def test_sample_gives_the_checkers_own_verdict(corpus: Path, tmp_path: Path) -> None:
    rulesets = dict(corpus_logs(corpus))
    verdicts = set()
    for rel in SAMPLE:
        theirs, ours = _both_verdicts(corpus / rel, rulesets[corpus / rel], tmp_path)
        assert ours == theirs, rel
        verdicts.add(theirs.split("): ", 1)[1].split(":")[0])
    assert verdicts == {"PASSED", "FAILED", "checker error"}


@pytest.mark.slow
def test_every_corpus_log_gives_the_checkers_own_verdict(corpus: Path, tmp_path: Path) -> None:
    logs = corpus_logs(corpus)
    assert len(logs) == 94  # 71 submission logs, 22 reference logs, 1 power log
    for path, ruleset in logs:
        theirs, ours = _both_verdicts(path, ruleset, tmp_path)
        assert ours == theirs, path


def test_replay_check_cli_reports_a_raising_checker_and_keeps_the_file(corpus: Path, tmp_path: Path) -> None:
    log = corpus / "mlperf-results/training/llm_moe_pretraining/nemo/rcp_logs/15360/seed_1.out"  # no time_ms
    imported = run_in_process("import", str(log), "--root", str(tmp_path), "--run-id", "ref", "--ruleset", "6.0.0")
    assert imported.returncode == 0, imported.stderr
    out = tmp_path / "ref.txt"
    result = run_in_process("replay", str(tmp_path / "ref"), "--check", "-o", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "compliance checker (mlperf-logging 4.1.68, training 6.0.0): checker error: KeyError: 'time_ms'" in (
        result.stdout
    )
    assert "Traceback" not in result.stdout + result.stderr
    assert out.is_file() and out.stat().st_size > 0


def test_replay_check_cli_passes_a_compliant_log_under_its_ruleset(corpus: Path, tmp_path: Path) -> None:
    log = corpus / SAMPLE[4]  # retinanet 5.1.0, closed: RCPs exist for it
    assert (
        run_in_process("import", str(log), "--root", str(tmp_path), "--run-id", "r", "--ruleset", "5.1.0").returncode
        == 0
    )
    result = run_in_process("replay", str(tmp_path / "r"), "--check")
    assert "compliance checker (mlperf-logging 4.1.68, training 5.1.0): PASSED" in result.stdout, result.stdout
    assert "RCP checker (mlperf-logging 4.1.68, training 5.1.0)" in result.stdout
    # under the recorded ruleset without typing it; a typed ruleset that does not know retinanet is refused
    refused = run_in_process("replay", str(tmp_path / "r"), "--ruleset", "6.1.0")
    assert refused.returncode == 2
    assert "benchmark 'retinanet' is not in training 6.1.0 (closed division): mlperf-logging's checker knows " in (
        " ".join(refused.stderr.split())
    )
    offline = run_in_process("replay", str(tmp_path / "r"), "-i", "official")
    assert offline.returncode == 2
    assert "reads the offline-evaluation rule, which applies to qwen35_397b_grpo under training 6.1.0" in (
        " ".join(offline.stderr.split())
    )


def test_a_benchmark_the_recorded_ruleset_does_not_know_is_the_data_saying_no(corpus: Path, tmp_path: Path) -> None:
    log = corpus / SAMPLE[1]  # bert, 4.1.0; 6.1.0 (the default when nothing is recorded) has no bert
    assert run_in_process("import", str(log), "--root", str(tmp_path), "--run-id", "b").returncode == 0
    scored = run_in_process("score", str(tmp_path / "b"))
    assert scored.returncode == 1
    assert "benchmark 'bert' is not in training 6.1.0 (closed division)" in " ".join(scored.stderr.split())
    assert not (tmp_path / "b" / "derived" / "scores.jsonl").exists()
    checked = run_in_process("replay", str(tmp_path / "b"), "--check")  # the checker still judges the log as recorded
    assert checked.returncode == 1 and "compliance checker" in checked.stdout
    unknown = run_in_process("import", str(log), "--root", str(tmp_path), "--ruleset", "6.2.0")
    assert unknown.returncode == 2 and "unknown ruleset '6.2.0'" in unknown.stderr


def test_a_typed_ruleset_that_does_not_know_the_run_leaves_its_scores_untouched(tmp_path: Path) -> None:
    """`score RUN --ruleset 5.1.0` on a 6.1.0 run exits 2 and writes nothing."""
    from tests.replay.runs import record_run

    run = record_run(tmp_path, "grpo", evals=[(4, 0.72)])
    assert run_in_process("replay", str(run.path)).returncode == 0
    scores = run.path / "derived" / "scores.jsonl"
    before = scores.read_bytes()
    result = run_in_process("score", str(run.path), "--ruleset", "5.1.0")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "benchmark 'qwen35_397b_grpo' is not in training 5.1.0" in " ".join(result.stderr.split())
    assert scores.read_bytes() == before
