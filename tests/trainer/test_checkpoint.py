import threading

import pytest
import torch

from recorder.checkpoints.fingerprint import fingerprint, matches
from recorder.checkpoints.recorder_format import (
    file_sha256,
    load_checkpoint,
    read_metadata,
    step_dirname,
    write_checkpoint,
)
from trainer.errors import CheckpointError
from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.saving.checkpoint import CheckpointWriter

SMALL = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)


@pytest.fixture()
def model_tok():
    return build_model(SMALL), build_tokenizer(SMALL)


@pytest.mark.parametrize("sync", [True, False])
def test_roundtrip_hash_metadata_fingerprint(tmp_path, model_tok, sync):
    model, tok = model_tok
    committed = []
    w = CheckpointWriter(tmp_path, model, tok, sync=sync, on_commit=committed.append)
    w.save(model, step=18, weight_update_ns=123)
    with torch.no_grad():  # the next optimizer step must not leak into the saved snapshot
        for p in model.parameters():
            p.add_(1.0)
    w.save(model, step=19, weight_update_ns=456)
    w.close()
    assert [c.step for c in committed] == [18, 19]
    c18 = committed[0]
    assert c18.path == tmp_path / step_dirname(18) and c18.path.name == "step_0000018"
    assert file_sha256(c18.path / "model.safetensors") == c18.sha256
    assert read_metadata(c18.path)["weight_update_ns"] == "123"
    assert c18.save_begin_ns <= c18.save_end_ns and 0 <= c18.blocked_ns
    loaded, tok2 = load_checkpoint(c18.path)
    assert tok2 == tok
    assert matches(c18.fingerprint["value"], fingerprint(loaded, tok2))
    assert not matches(c18.fingerprint["value"], committed[1].fingerprint["value"])
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")] == []


def test_async_blocks_less_than_sync(tmp_path, model_tok):
    model, tok = model_tok
    w = CheckpointWriter(tmp_path, model, tok, sync=False, on_commit=lambda c: None)
    blocked = w.save(model, step=1, weight_update_ns=1)
    w.close()
    assert blocked < w.committed[0].save_end_ns - w.committed[0].save_begin_ns


@pytest.mark.parametrize("sync", [True, False])
def test_failed_write_is_not_committed(tmp_path, model_tok, sync):
    model, tok = model_tok
    target = tmp_path / "checkpoints"
    target.write_text("a file where the checkpoints directory should be")
    committed = []
    w = CheckpointWriter(target, model, tok, sync=sync, on_commit=committed.append)
    with pytest.raises(CheckpointError, match="step 18"):
        w.save(model, step=18, weight_update_ns=1)
        w.close()
    assert committed == []


def test_never_overwrites(tmp_path, model_tok):
    model, tok = model_tok
    (tmp_path / step_dirname(5)).mkdir()
    with pytest.raises(CheckpointError, match="never overwritten"):
        write_checkpoint(
            tmp_path / step_dirname(5),
            {"w": torch.zeros(1)},
            config_json="{}",
            tokenizer_json="{}",
            weight_update_ns=1,
            step=5,
        )


def test_load_refuses_missing_files(tmp_path):
    with pytest.raises(CheckpointError, match="missing"):
        load_checkpoint(tmp_path)


def test_writer_thread_is_daemon_and_named(tmp_path, model_tok):
    model, tok = model_tok
    w = CheckpointWriter(tmp_path, model, tok, sync=False, on_commit=lambda c: None)
    assert any(t.name == "checkpoint-writer" for t in threading.enumerate())
    w.close()


def test_drain_waits_and_keeps_the_writer_open(tmp_path, model_tok):
    model, tok = model_tok
    w = CheckpointWriter(tmp_path, model, tok, sync=False, on_commit=lambda c: None)
    w.save(model, step=1, weight_update_ns=1)
    w.drain()
    assert [c.step for c in w.committed] == [1]
    w.save(model, step=2, weight_update_ns=2)
    w.close()
    assert [c.step for c in w.committed] == [1, 2]


@pytest.mark.parametrize("sync", [True, False])
def test_any_failure_of_a_save_ends_the_save_not_the_loop(tmp_path, model_tok, sync):
    """A failure that is not a disk error (here: fingerprinting raises) must surface as a CheckpointError at the
    next save or at close; the background thread must not die and leave the loop blocked on its queue."""
    model, tok = model_tok

    class BrokenTokenizer:  # the real tokenizer, except that encoding (used by the fingerprint) raises
        def __getattr__(self, name):
            return getattr(tok, name)

        def encode(self, text):
            raise RuntimeError("tokenizer exploded")

    broken = BrokenTokenizer()
    committed = []
    w = CheckpointWriter(tmp_path, model, broken, sync=sync, on_commit=committed.append, max_pending=1)
    outcome = []

    def loop():
        try:
            for step in (18, 19, 20, 21):
                w.save(model, step=step, weight_update_ns=step)
            w.close()
        except CheckpointError as e:
            outcome.append(e)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "the training loop is blocked on a dead checkpoint writer"
    [error] = outcome
    assert "step 18" in str(error) and "tokenizer exploded" in str(error)
    assert committed == []


def test_a_tied_embedding_model_checkpoint_loads_and_a_wrong_config_is_still_refused(tmp_path, model_tok):
    """SmolLM2 ties its output embedding to its input embedding; the trainer's checkpoint stores the state_dict
    as is (the tied tensor under both names), and the config-against-weights check must take it."""
    import json

    from transformers import LlamaForCausalLM

    untied, tok = model_tok
    config = untied.config.to_dict()
    config["tie_word_embeddings"] = True
    model = LlamaForCausalLM(type(untied.config).from_dict(config)).float()
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    committed = []
    w = CheckpointWriter(tmp_path, model, tok, sync=True, on_commit=committed.append)
    w.save(model, step=18, weight_update_ns=1)
    w.close()
    loaded, _ = load_checkpoint(committed[0].path)
    assert torch.equal(loaded.get_input_embeddings().weight, model.get_input_embeddings().weight)
    cfg_file = committed[0].path / "config.json"
    wrong = json.loads(cfg_file.read_text()) | {"num_hidden_layers": 3}
    cfg_file.write_text(json.dumps(wrong))
    with pytest.raises(CheckpointError, match="does not describe these weights"):
        load_checkpoint(committed[0].path)
