"""RecorderCallback on a real TRL GRPOTrainer run: a tiny random Llama on CPU, a checkpoint at every step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
torch = pytest.importorskip("torch")

from datasets import Dataset
from safetensors.torch import load_file
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from recorder.adapters.trl import RecorderCallback, layout_problems, sha256_file, step_metrics
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run
from tests.helpers import run_cli
from tests.integrity.forge import Row, copy_run, rewrite

STEPS = 3


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    chars = "abcdefghijklmnopqrstuvwxyz0123456789 +="
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{c: i + 4 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")  # one token per character
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def tiny_model(vocab_size: int) -> LlamaForCausalLM:
    torch.manual_seed(0)
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=vocab_size,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=64,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
        )
    )


def count_digits(completions: list[str], **kwargs: Any) -> list[float]:
    return [float(sum(ch.isdigit() for ch in c)) for c in completions]


class WeightsAtUpdate(TrainerCallback):  # type: ignore[misc]
    """Test probe: a copy of the weights right after each optimizer step (step = global_step + 1)."""

    def __init__(self) -> None:
        self.weights: dict[int, dict[str, Any]] = {}

    def on_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        self.weights[state.global_step + 1] = {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def trl_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, WeightsAtUpdate]:
    return record_trl_run(tmp_path_factory.mktemp("runs"))


def record_trl_run(root: Path) -> tuple[RunDir, WeightsAtUpdate]:
    """A real TRL GRPOTrainer run of STEPS steps with the callback recording it into `root/trl`."""
    run = RunDir.create(root, "trl")
    tok = tiny_tokenizer()
    probe = WeightsAtUpdate()
    args = GRPOConfig(
        output_dir=str(run.checkpoints),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=6,
        max_steps=STEPS,
        learning_rate=1e-2,
        save_strategy="steps",
        save_steps=1,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=tiny_model(len(tok)),
        reward_funcs=count_digits,
        args=args,
        train_dataset=Dataset.from_dict({"prompt": [f"{i}+{i}=" for i in range(16)]}),
        processing_class=tok,
        callbacks=[RecorderCallback(run, benchmark="tiny-grpo"), probe],
    )
    trainer.train()
    return run, probe


def test_run_verifies(trl_run: tuple[RunDir, WeightsAtUpdate]) -> None:
    run, _ = trl_run
    done = run_cli("verify", str(run.path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verify: intact" in done.stdout


def test_a_save_that_blocks_longer_than_its_step_is_no_alarm(
    trl_run: tuple[RunDir, WeightsAtUpdate], tmp_path: Path
) -> None:
    """Transformers saves after the step it timed, so its saves may outlast its steps (short steps on a busy
    machine): only our trainer's step includes its save."""
    run = copy_run(trl_run[0].path, tmp_path)

    def short_steps(events: list[Row]) -> list[Row]:
        for e in events:
            if e["kind"] == "step_metrics":
                e["data"] = {**e["data"], "step_s": 1e-6}
        return events

    rewrite(run / "events" / "trainer-0001.arrows", short_steps)
    result = verify_run(run)
    assert result.ok, result.problems


def test_weight_updates_match_the_checkpoints(trl_run: tuple[RunDir, WeightsAtUpdate]) -> None:
    run, probe = trl_run
    events = read_run(run).events
    updates = {e.step: e for e in events if e.kind == "weight_update"}
    commits = {e.step: e for e in events if e.kind == "checkpoint_committed"}
    assert sorted(updates) == sorted(commits) == list(range(1, STEPS + 1))
    for step, commit in commits.items():
        d = commit.data
        assert d["weight_update_ns"] == updates[step].time_ns
        assert updates[step].samples_count == commit.samples_count == step * 4
        weights = run.path / d["path"] / "model.safetensors"
        assert d["path"] == f"checkpoints/checkpoint-{step}"
        assert (d["sha256"], d["bytes"]) == sha256_file(weights)
        assert updates[step].time_ns <= d["save_begin_ns"] <= d["save_end_ns"] == commit.time_ns
        assert d["blocked_ns"] == d["save_end_ns"] - d["save_begin_ns"]
        # The checkpoint holds exactly the weights as they were when the weight update was recorded.
        saved = load_file(str(weights))
        at_update = probe.weights[step]
        assert all(torch.equal(saved[k], at_update[k]) for k in saved), f"step {step}"
    # ...and the weights did change between steps, so matching the right step means something.
    first, last = load_file(str(run.checkpoints / "checkpoint-1" / "model.safetensors")), probe.weights[STEPS]
    assert any(not torch.equal(first[k], last[k]) for k in first)


def test_event_order_and_boundaries(trl_run: tuple[RunDir, WeightsAtUpdate]) -> None:
    run, _ = trl_run
    events = [e for e in read_run(run).events if e.writer == "trainer"]
    by_seq = sorted(events, key=lambda e: e.seq)
    kinds = [e.kind for e in by_seq]
    assert kinds[:5] == ["run_opened", "init_start", "init_stop", "run_start", "block_start"]
    per_step = [(e.kind, e.step) for e in by_seq if e.kind in ("weight_update", "checkpoint_committed", "step_metrics")]
    assert per_step == [
        (k, s) for s in range(1, STEPS + 1) for k in ("weight_update", "checkpoint_committed", "step_metrics")
    ]
    assert kinds[-3:] == ["block_stop", "train_stop", "segment_closed"]
    opened = by_seq[0].data
    assert (opened["benchmark"], opened["global_batch_size"], opened["source"]) == ("tiny-grpo", 4, "trl")
    assert opened["config"]["save_steps"] == 1 and "trl" in opened["provenance"]["packages"]
    metrics = [e for e in by_seq if e.kind == "step_metrics"]
    assert all({"loss", "reward", "grad_norm", "tokens", "samples", "extra"} <= set(e.data) for e in metrics)
    assert all(e.data["tokens"] > 0 and e.data["samples"] == 4 for e in metrics)


def test_step_metrics_takes_the_token_delta() -> None:
    metrics = step_metrics(
        {"loss": 0.5, "num_tokens": 96.0, "learning_rate": 1e-3, "reward": 1.0, "step_time": 0.2, "note": "text"},
        tokens_before=48.0,
        samples=4,
    )
    assert metrics.to_data() == {
        "samples": 4,
        "loss": 0.5,
        "tokens": 48.0,
        "reward": 1.0,
        "step_s": 0.2,
        "extra": {"learning_rate": 1e-3},
    }


def test_layouts_the_evaluator_cannot_use_are_flagged(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r")
    good = GRPOConfig(output_dir=str(run.checkpoints), report_to=[], use_cpu=True)
    assert layout_problems(good, run) == []
    bad = GRPOConfig(output_dir=str(tmp_path / "elsewhere"), save_total_limit=2, report_to=[], use_cpu=True)
    problems = layout_problems(bad, run)
    assert len(problems) == 2
    assert "outside the run directory" in problems[0] and "save_total_limit=2" in problems[1]
