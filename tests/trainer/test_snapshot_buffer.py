"""Checkpoint snapshots go through one reused host buffer, and what is saved is exactly the step's weights."""

import pytest
import torch
from safetensors.torch import load_file

from recorder.checkpoints.recorder_format import WEIGHTS
from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.saving.checkpoint import CheckpointWriter
from trainer.saving.snapshot_buffer import SnapshotBuffer

SMALL = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)


def _optimizer_step(model, optimizer, step: int) -> None:
    """A real update: every weight moves (AdamW on a loss over a batch that depends on the step)."""
    ids = torch.arange(step, step + 12).remainder(model.config.vocab_size).view(2, 6)
    loss = model(input_ids=ids, labels=ids).loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


@pytest.mark.parametrize(("sync", "max_pending"), [(True, 2), (False, 1), (False, 2)])
def test_saved_bytes_equal_the_weights_at_each_step(tmp_path, sync, max_pending):
    model, tok = build_model(SMALL), build_tokenizer(SMALL)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    w = CheckpointWriter(tmp_path, model, tok, sync=sync, on_commit=lambda c: None, max_pending=max_pending)
    expected = {}
    for step in range(1, 7):  # more saves than slots: every slot is filled again while others are in flight
        _optimizer_step(model, optimizer, step)
        expected[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        w.save(model, step=step, weight_update_ns=step)
        _optimizer_step(model, optimizer, 100 + step)  # the next update starts at once, the write may still run
    w.close()
    assert [c.step for c in w.committed] == list(range(1, 7))
    for c in w.committed:
        saved = load_file(str(c.path / WEIGHTS))
        assert saved.keys() == expected[c.step].keys()
        for name, tensor in expected[c.step].items():
            assert saved[name].dtype == tensor.dtype and torch.equal(saved[name], tensor), (c.step, name)
    assert not torch.equal(saved[name], model.state_dict()[name])  # the test can tell steps apart


def test_snapshots_reuse_one_allocation():
    model = build_model(SMALL)
    buffer = SnapshotBuffer(model, slots=2)
    start, end = buffer.memory.data_ptr(), buffer.memory.data_ptr() + buffer.memory.numel()
    assert not buffer.pinned  # the weights are on the CPU: ordinary memory
    bases = set()
    for _ in range(5):
        snap = buffer.take(model)
        for name, t in snap.tensors.items():
            assert start <= t.data_ptr() and t.data_ptr() + t.numel() * t.element_size() <= end, name
            assert torch.equal(t, model.state_dict()[name])
        bases.add(min(t.data_ptr() for t in snap.tensors.values()))
        buffer.release(snap)
    assert len(bases) == 2  # five snapshots, two slots' addresses: nothing allocated per snapshot
    assert buffer.memory.data_ptr() == start


def test_a_snapshot_is_not_changed_by_later_updates():
    model = build_model(SMALL)
    buffer = SnapshotBuffer(model, slots=2)
    first = buffer.take(model)
    before = {k: v.clone() for k, v in first.tensors.items()}
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    second = buffer.take(model)  # the other slot, while the first is still held
    assert all(torch.equal(first.tensors[k], before[k]) for k in before)
    assert not torch.equal(second.tensors["model.embed_tokens.weight"], before["model.embed_tokens.weight"])
