"""The writer contract's fixtures: each producer's run, recorded once per class with os.fsync observed."""

from __future__ import annotations

import pytest

from recorder.store.reader import Segment
from tests.contract.writer_contract import Recorded, WriterContract, record_observed


@pytest.fixture(scope="class")
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    contract: WriterContract = request.cls()
    return record_observed(contract, tmp_path_factory.mktemp(f"contract-{contract.writer}"))


@pytest.fixture(scope="class")
def segments(request: pytest.FixtureRequest, recorded: Recorded) -> list[Segment]:
    contract: WriterContract = request.cls()
    return contract.own_segments(recorded.run)
