"""Security: checkpoints are never unpickled (the code and its behaviour), recorded paths never leave the
run, `recorder query` cannot write or attach files (tests/history/test_query.py), a tampered event is
caught by verify and replay refuses it (test_replay_trust.py)."""

from __future__ import annotations

import os
import pickle
import re
import shutil
from pathlib import Path

import pytest

from tests.cli.shell import run_main
from tests.helpers import REPO, run_cli

PACKAGES = ("recorder", "replay", "trainer", "evaluator")
# Calls that unpickle (or may: torch.load without weights_only, numpy with allow_pickle) or run code.
UNSAFE = re.compile(
    r"\btorch\.load\(|\bpickle\.loads?\(|\bUnpickler\b|\bjoblib\.load|\bdill\.|\bcloudpickle\.|"
    r"allow_pickle\s*=\s*True|weights_only\s*=\s*False|trust_remote_code\s*=\s*True|(?<![.\w])eval\(|(?<![.\w])exec\("
)


# The reviewed exceptions, each a restricted unpickler: two of a torch DCP checkpoint, its `.metadata` through
# an allow list of DCP's own classes, and a DCP tensor chunk's torch.save pickle through an allow list of
# torch's tensor rebuilds, storage classes and dtypes (hostile globals refused for both: tests/checkpoints),
# and torch's own weights-only loader of a team's torch.save file.
# Anything else that unpickles is a finding.
ALLOWED = {
    "recorder/checkpoints/torch_dcp/safe_metadata.py": re.compile(
        r"_AllowListUnpickler|^torch's own weights-only|^`\.metadata`"
    ),
    "recorder/checkpoints/torch_dcp/torch_save_view.py": re.compile(r"^class _Unpickler\(pickle\.Unpickler\):$"),
    # a team's torch.save file through torch's own weights-only allow list (tensors, containers, plain values)
    "recorder/checkpoints/torch_save_file.py": re.compile(r"torch\.load\(.*weights_only=True"),
}


def test_no_unpickling_call_in_the_code() -> None:
    hits = []
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            for n, line in enumerate(path.read_text().splitlines(), 1):
                code = line.split("#", 1)[0]
                if UNSAFE.search(code) and not (rel in ALLOWED and ALLOWED[rel].search(line.strip())):
                    hits.append(f"{rel}:{n}: {line.strip()}")
    assert hits == []


class _Boom:
    """Unpickling this creates the marker file: proof that something unpickled it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(scope="module")
def trained(small_run: tuple[Path, float]) -> Path:
    return small_run[0]


def test_malicious_pickles_next_to_the_weights_are_never_loaded(tmp_path: Path, trained: Path) -> None:
    """pytorch_model.bin, training_args.bin, optimizer.pt and a .pkl beside a real checkpoint: loading and
    evaluating it never runs them."""
    run = tmp_path / trained.name
    shutil.copytree(trained, run)
    marker = tmp_path / "PWNED"
    payload = pickle.dumps(_Boom(marker))
    for cp in sorted((run / "checkpoints").iterdir()):
        for name in ("pytorch_model.bin", "training_args.bin", "optimizer.pt", "rng_state.pth", "state.pkl"):
            (cp / name).write_bytes(payload)
    from recorder.checkpoints.recorder_format import load_checkpoint

    load_checkpoint(run / "checkpoints" / "step_0000018")
    r = run_cli("eval", str(run), "--all")
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr
    assert "accuracy" in r.stdout  # the checkpoints were evaluated, from their safetensors
    assert not marker.exists()


@pytest.mark.slow  # the default tier keeps the pickles beside the weights
def test_a_pickle_in_place_of_the_weights_is_refused(tmp_path: Path, trained: Path) -> None:
    """The weights file replaced by a pickle: verify refuses the run, and a forced evaluation's loader refuses
    the file; loading it directly is a typed CheckpointError (safetensors parses a header, it never unpickles)."""
    run = tmp_path / trained.name
    shutil.copytree(trained, run)
    marker = tmp_path / "PWNED"
    weights = run / "checkpoints" / "step_0000018" / "model.safetensors"
    weights.write_bytes(pickle.dumps(_Boom(marker)))
    from recorder.checkpoints.recorder_format import load_checkpoint
    from trainer.errors import CheckpointError

    with pytest.raises(CheckpointError):
        load_checkpoint(weights.parent)
    r = run_cli("eval", str(run), "--order", "18")  # verify refuses the run: the commit names other bytes
    assert r.returncode == 1 and "[rule commit-sha]" in r.stderr, r.stdout + r.stderr
    # forced, the loader refuses it as it reads it: the safetensors header it parses (before the bytes it hashes
    # as it reads them) is not one
    r = run_cli("eval", str(run), "--order", "18", "--force")
    refused = "HashMismatchError" in r.stdout or "UnloadableCheckpointError" in r.stdout
    assert r.returncode == 1 and refused, r.stdout + r.stderr
    assert not marker.exists()


def test_loading_a_checkpoint_calls_no_unpickler(monkeypatch: pytest.MonkeyPatch, trained: Path) -> None:
    """torch.load and pickle's loaders are booby-trapped while a checkpoint loads: none is called."""
    import torch

    from recorder.checkpoints.recorder_format import load_checkpoint

    calls: list[str] = []

    def trap(name: str):  # type: ignore[no-untyped-def]
        def f(*a, **k):  # type: ignore[no-untyped-def]
            calls.append(name)
            raise AssertionError(f"{name} called while loading a checkpoint")

        return f

    monkeypatch.setattr(torch, "load", trap("torch.load"))
    monkeypatch.setattr(pickle, "load", trap("pickle.load"))
    monkeypatch.setattr(pickle, "loads", trap("pickle.loads"))
    model, _ = load_checkpoint(trained / "checkpoints" / "step_0000019")
    assert calls == [] and sum(p.numel() for p in model.parameters()) > 0


def test_query_cannot_write_or_attach(tmp_path: Path) -> None:
    """The full matrix is tests/history/test_query.py; here the two that matter most, through the CLI."""
    target = tmp_path / "out.csv"
    for sql in (f"COPY (SELECT 1) TO '{target}'", f"ATTACH '{tmp_path / 'x.db'}' AS x"):
        r = run_main("query", "--root", str(tmp_path), sql)
        assert r.code == 2 and "refused" in r.err and "Traceback" not in r.err, r.err
    assert not target.exists() and not (tmp_path / "x.db").exists()


def test_reading_metadata_of_a_pickle_is_a_typed_error(tmp_path: Path) -> None:
    from recorder.checkpoints.recorder_format import read_metadata
    from trainer.errors import CheckpointError

    (tmp_path / "model.safetensors").write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        read_metadata(tmp_path)
