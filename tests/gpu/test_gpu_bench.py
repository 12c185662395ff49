"""bench/gpu.sh end to end at tiny shapes (the CPU dry run, so the GPU bench cannot rot), its pure parts
with hand-computed numbers, and the same run on a GPU where one is present (marker `gpu`)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import gpu_bench
import gpu_limits
import gpu_table
from gpu_workload import FULL, TINY, reward_text


def run_gpu_sh(results: Path, *flags: str) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        ["bash", str(REPO / "bench" / "gpu.sh"), str(results), "--tiny", *flags],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    [out] = sorted(results.glob("gpu-*-tiny.jsonl"))
    return [json.loads(line) for line in out.read_text().splitlines()]


def check_dry_run(records: list[dict[str, Any]], device: str) -> None:
    by = {(r["record"], r.get("mode")): r for r in records}
    assert [(r["record"], r.get("mode")) for r in records] == [
        ("env", None),
        ("limits", None),
        ("ours", "none"),
        ("trl", None),
        ("ours", "async"),
        ("ours", "sync"),
        ("summary", None),
    ]
    assert not [r for r in records if "error" in r or "skipped" in r], records
    assert by[("env", None)]["device"] == device
    steps = by[("env", None)]["steps"]
    warmup = by[("env", None)]["warmup"]
    for key in (("ours", "none"), ("ours", "async"), ("ours", "sync"), ("trl", None)):
        r = by[key]
        assert r["steps"] == steps and len(r["loss"]) == steps, key
        assert r["loss_finite"] and all(math.isfinite(x) for x in r["loss"]), key
        assert r["weights_changed"], f"{key}: the weights did not move: nothing was trained"
        assert r["step_s"] > 0 and r["completion_tokens_per_s"] > 0, key
        # every sequence gets at most completion_tokens; <eos> may end a few early
        assert (
            0.5 * TINY.global_batch * TINY.completion_tokens
            <= r["completion_tokens_per_step"]
            <= TINY.global_batch * TINY.completion_tokens
        ), key
    assert by[("ours", "none")]["committed"] == 0
    for mode in ("async", "sync"):
        assert by[("ours", mode)]["committed"] == warmup + steps  # a checkpoint at every step
        assert by[("ours", mode)]["checkpoint_bytes"] > by[("limits", None)]["checkpoint_bytes"]  # + header
    s = by[("summary", None)]
    assert s["speedup_vs_trl"] == pytest.approx(by[("trl", None)]["step_s"] / by[("ours", "none")]["step_s"])
    assert s["async_overhead"] == pytest.approx(by[("ours", "async")]["step_s"] / by[("ours", "none")]["step_s"] - 1)


@pytest.mark.slow  # a tiny training on the CPU
def test_tiny_dry_run_on_cpu(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="the TRL peer needs the trl extra (pip install -e .[trl])")
    records = run_gpu_sh(tmp_path / "results", "--device", "cpu")
    check_dry_run(records, "cpu")
    text = gpu_table.table(records)
    for row in (
        "| ours (torch) | none |",
        "| TRL GRPOTrainer | none |",
        "| ours (torch) | async |",
        "| ours (torch) | sync |",
    ):
        assert row in text
    assert "TINY shapes: not a performance number" in text and "n/a" not in text.split("\n\n")[-1]


@pytest.mark.gpu
def test_tiny_run_on_gpu(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="the TRL peer needs the trl extra (pip install -e .[trl])")
    check_dry_run(run_gpu_sh(tmp_path / "results", "--device", "cuda"), "cuda")


@pytest.mark.slow  # a tiny training on the CPU
def test_budget_skips_what_would_not_fit(tmp_path: Path) -> None:
    records = run_gpu_sh(tmp_path / "results", "--device", "cpu", "--parts", "ours", "--budget-s", "0")
    ours = {r["mode"]: r for r in records if r["record"] == "ours"}
    assert ours["none"]["weights_changed"] and "skipped" not in ours["none"]  # the baseline always runs ...
    assert ours["none"]["steps"] == 1 < ours["none"]["steps_planned"]  # ... one timed step
    assert "time budget" in ours["async"]["skipped"] and "time budget" in ours["sync"]["skipped"]
    assert records[-1]["async_overhead"] is None


def test_summary_ratios_by_hand() -> None:
    records = [
        {"record": "ours", "mode": "none", "step_s": 2.0, "completion_tokens_per_s": 100.0, "checkpoint_block_s": 0.0},
        {
            "record": "ours",
            "mode": "async",
            "step_s": 2.02,
            "completion_tokens_per_s": 99.0,
            "checkpoint_block_s": 0.01,
        },
        {"record": "ours", "mode": "sync", "step_s": 3.0, "completion_tokens_per_s": 66.0, "checkpoint_block_s": 1.0},
        {"record": "trl", "step_s": 5.0, "completion_tokens_per_s": 40.0},
        {"record": "limits", "bounds": {"async_block_s": 0.005, "sync_block_s": 0.5}},
    ]
    s = gpu_bench.summarize(records)
    assert s["speedup_vs_trl"] == pytest.approx(2.5) and s["meets_2x"]
    assert s["tokens_per_s_ratio"] == pytest.approx(2.5)
    assert s["async_overhead"] == pytest.approx(0.01) and s["async_within_2pct"]
    assert s["sync_overhead"] == pytest.approx(0.5)
    assert s["async_block_vs_bound"] == pytest.approx(2.0)


def test_summary_without_a_peer_gives_none() -> None:
    s = gpu_bench.summarize(
        [
            {"record": "trl", "error": "ModuleNotFoundError: trl"},
            {
                "record": "ours",
                "mode": "none",
                "step_s": 1.0,
                "completion_tokens_per_s": 1.0,
                "checkpoint_block_s": 0.0,
            },
        ]
    )
    assert s["speedup_vs_trl"] is None and s["async_overhead"] is None and "meets_2x" not in s


def test_filesystem_type_of_a_real_path(tmp_path: Path) -> None:
    fs = gpu_limits.filesystem_type(tmp_path)
    assert fs is None or fs in Path("/proc/mounts").read_text()
    assert gpu_limits.filesystem_type(Path("/")) not in (None, "")


def test_lower_bounds_by_hand() -> None:
    b = gpu_limits.save_lower_bounds(10**9, {"gb_per_s": 50.0}, {"gb_per_s": 2.0})
    assert b["async_block_s"] == pytest.approx(0.02)
    assert b["sync_block_s"] == pytest.approx(0.02 + 0.5)


@pytest.mark.parametrize("shapes", [TINY, FULL], ids=["tiny", "smollm2-135m"])
def test_checkpoint_bytes_match_the_model(shapes: Any) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.device("meta"):  # shapes only: no 135M-parameter allocation
        model = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=shapes.vocab,
                hidden_size=shapes.hidden,
                num_hidden_layers=shapes.layers,
                num_attention_heads=shapes.heads,
                num_key_value_heads=shapes.kv_heads,
                intermediate_size=shapes.intermediate,
                tie_word_embeddings=True,
            )
        )
    params = sum(p.numel() for p in model.parameters())
    assert gpu_bench._param_bytes(shapes, torch.bfloat16) == 2 * params
    if shapes is FULL:
        assert 134_000_000 < params < 135_000_000  # SmolLM2-135M


def test_reward_by_hand() -> None:
    assert reward_text("w4 w5 w6 w9") == 0.5
    assert reward_text("") == 0.0
