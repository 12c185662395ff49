"""The writer contract's fixtures: each producer's run, recorded once per class."""

from __future__ import annotations

import pytest

from recorder.reader import Segment
from recorder.run import RunDir
from tests.contract.writer_contract import Recorded, WriterContract, own_segments, record_observed


@pytest.fixture(scope="class")
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    contract: WriterContract = request.cls()
    if contract.shared_run is not None:
        return Recorded(RunDir.open(request.getfixturevalue(contract.shared_run)), fsyncs=None)
    return record_observed(contract, tmp_path_factory.mktemp(f"contract-{contract.writer}"))


@pytest.fixture(scope="class")
def segments(request: pytest.FixtureRequest, recorded: Recorded) -> list[Segment]:
    return own_segments(recorded.run, request.cls.writer)
