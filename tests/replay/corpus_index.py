"""The corpus's mllog files with their own ruleset, from ../shared/corpus/mlperf-results/INDEX.tsv."""

from __future__ import annotations

import csv
import re
from pathlib import Path

_QWEN = re.compile(r"llm_post_training/rcp_logs/(GBS\d+)/(seed_\d+\.out)$")
KINDS = ("result", "rcp_log", "power_log")


def corpus_logs(corpus: Path) -> list[tuple[Path, str]]:
    """(path, ruleset) of every result, reference (RCP) and power log the index lists. A reference log valid
    under two rulesets ('6.0.0/6.1.0') is taken under the first; the qwen35 reference logs live in
    qwen35_397b_grpo_rcp/."""
    out: list[tuple[Path, str]] = []
    with open(corpus / "mlperf-results" / "INDEX.tsv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["kind"] not in KINDS:
                continue
            ruleset = re.match(r"\d+\.\d+\.\d+", row["ruleset"])
            assert ruleset is not None, row
            qwen = _QWEN.search(row["path"])
            if qwen:
                path = corpus / "qwen35_397b_grpo_rcp" / qwen.group(1) / qwen.group(2)
            else:
                path = corpus / "mlperf-results" / row["repo"].split("/")[1] / row["path"]
            out.append((path, ruleset.group(0)))
    return out


def complete_result_sets(corpus: Path) -> list[tuple[Path, str]]:
    """(folder, ruleset) of every result folder holding as many result files as its benchmark requires."""
    from mlperf_logging.benchmark_meta import get_result_file_counts

    counts = get_result_file_counts("training")
    folders: dict[Path, str] = {}
    for path, ruleset in corpus_logs(corpus):
        if path.name.startswith("result_") and path.parent.name in counts:
            folders[path.parent] = ruleset
    return sorted(
        (folder, ruleset)
        for folder, ruleset in folders.items()
        if len(list(folder.glob("result_*.txt"))) >= counts[folder.name]
    )


FIXTURE_RESULTS = Path(__file__).resolve().parents[1] / "fixtures" / "mlperf_results"


def fixture_result_sets() -> list[tuple[Path, str]]:
    """(folder, ruleset) of every result set in tests/fixtures/mlperf_results (its INDEX.tsv names each file's
    repository, commit and path: whole result folders of the public training_results repositories, one or
    two per benchmark and round, 2.1 to 5.1)."""
    folders: dict[Path, str] = {}
    with open(FIXTURE_RESULTS / "INDEX.tsv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            path = FIXTURE_RESULTS / row["repo"].split("/")[1] / row["path"]
            folders[path.parent] = row["ruleset"]
    return sorted(folders.items())
