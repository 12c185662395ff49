"""Two real ranks (gloo, FSDP2) each writing their own shard through torch DCP, hashing as they write: the
directory appears whole, its manifest is the files' own digests, and it loads to the unsharded weights."""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path

import torch
import torch.multiprocessing as mp

from tests.checkpoints import fixtures

WORLD = 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank(rank: int, port: int, out: str) -> None:
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard

    from recorder.checkpoints.torch_dcp.dcp_write import write_dcp_checkpoint

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        _, model = fixtures.tiny()
        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        manifest = write_dcp_checkpoint(
            Path(out) / "step_0000003",
            model.state_dict(),
            config_json=model.config.to_json_string(),
            tokenizer_json="{}",
            step=3,
            distributed=True,
        )
        if rank == 0:
            assert manifest is not None
            (Path(out) / "manifest.json").write_text(json.dumps(manifest.to_dict()))
    finally:
        dist.destroy_process_group()


def test_every_rank_writes_and_hashes_its_own_shard(tmp_path: Path) -> None:
    mp.spawn(_rank, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    step = tmp_path / "step_0000003"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json", "step_0000003"]  # no temp dir left
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    names = [s["path"] for s in manifest["shards"]]
    assert names == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    for s in manifest["shards"]:
        data = (step / s["path"]).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (s["bytes"], s["sha256"])
    from recorder.checkpoints.manifest import Manifest
    from recorder.checkpoints.readers import detect, load_state_dict

    info = detect(step)
    assert (info.format, info.world_size) == ("torch-dcp", WORLD)
    state, read = load_state_dict(info, dtype="fp32", expected=Manifest.from_dict(manifest))
    assert read.root == manifest["root"]
    _, model = fixtures.tiny()
    want = model.state_dict()
    assert sorted(state) == sorted(want) and all(torch.equal(state[k], want[k]) for k in want)
