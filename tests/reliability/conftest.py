"""One small uninterrupted training run per session, shared by the crash, fault and security tests (copy it
before changing it): its duration bounds the kill instants."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.reliability.crash import SMALL_TRAIN


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    root = tmp_path_factory.mktemp("small")
    t0 = time.perf_counter()
    r = run_cli("train", "--root", str(root), "--run-id", "small", *SMALL_TRAIN)
    assert r.returncode == 0, r.stderr
    return root / "small", time.perf_counter() - t0
