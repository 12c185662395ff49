"""Shared fixtures. Marks: slow, gpu (skipped without CUDA), vllm (own virtual environment)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# The team trees under fixtures/ are other projects: their own tests are theirs, not this suite's.
collect_ignore = ["fixtures"]

REPO = Path(__file__).resolve().parents[1]
# RECORDER_CORPUS: where a worktree that is not next to ../shared finds it.
CORPUS = Path(os.environ.get("RECORDER_CORPUS", REPO.parent / "shared" / "corpus"))
# A developer's signing key must not sign the tests' runs (a signed segment has one more event, and session
# fixtures are recorded before any function fixture could unset it); the signature tests set it themselves.
os.environ.pop("RECORDER_SIGNING_KEY", None)
# Nor may a developer's trusted keys or opt-out judge them (tests/integrity/test_run_trust.py sets its own).
os.environ.pop("RECORDER_TRUST", None)
os.environ.pop("RECORDER_UNTRUSTED_OK", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in items:
        # the marker, not item.keywords: keywords also hold directory and file names (tests/gpu/ itself)
        if item.get_closest_marker("gpu") is not None and not has_gpu:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real MLPerf logs in ../shared/corpus (read-only)."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """One local Ray cluster per test session (ray.init costs ~3 s and ~400 MB)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default `recorder train` run (GBS 256, steps 1..19, checkpoints 18 and 19), trained once per
    session, only when a test asks for it. The warm-up init is cached under ~/.cache/recorder/warmup, so
    only the first session on a machine pays for it (about two minutes on 2 cores)."""
    torch = pytest.importorskip("torch")
    from trainer.config import load_config
    from trainer.loop import GRPOTrainer

    root = tmp_path_factory.mktemp("trained")
    threads = torch.get_num_threads()
    try:
        GRPOTrainer(load_config(), root=root, run_id="trained").run()
    finally:
        torch.set_num_threads(threads)  # the trainer pins 1 thread; give the session its setting back
    return root / "trained"
