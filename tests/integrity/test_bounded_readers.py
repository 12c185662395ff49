"""Every file a team or a run supplies to `recorder zero-shot` goes through one bounded reader
(recorder.untrusted.bounded_documents over recorder.untrusted.untrusted_files.read_bounded): a FIFO, a link to /dev/zero and a
2 GB sparse file are refused at once, before a byte is read, and a document nested or sized past the caps is
refused naming the file; never a traceback, a hang or gigabytes of memory."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evaluator.harness.errors import TaskDataError, TaskPinsError
from evaluator.harness.task_content import read_pins
from evaluator.harness.task_rows import read_rows
from evaluator.zero_shot.errors import ZeroShotInputError
from evaluator.zero_shot.holdout_check.reference import logged_loss
from evaluator.zero_shot.origin.declaration import read_declaration
from evaluator.zero_shot.origin.team_config import read_team_config
from evaluator.zero_shot.origin.training_run import holdout_bytes
from recorder.errors import InputError

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A reader that blocked on a FIFO would hang the suite: the alarm fails the test instead."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError("the reader blocked")

    before = signal.signal(signal.SIGALRM, stop)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    os.symlink("/dev/zero", path)


def _sparse(path: Path) -> None:
    with open(path, "wb") as f:  # 2 GB of holes: the file system stores none of them
        f.seek(2 * 2**30)
        f.write(b"\n")


# (the file the reader reads, the call that reads it): each a reader of a file a team or run supplies
READERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "declaration": ("pyproject.toml", lambda d: read_declaration(d)),
    "all_config.yaml": ("all_config.yaml", lambda d: read_team_config(d, model_code=None)),
    "scalars": ("tensorboard_scalars.json", lambda d: logged_loss(d, 10)),
    "event file": ("events.out.tfevents.1.host", lambda d: logged_loss(d, 10)),
    "task pins": ("pins.txt", lambda d: read_pins(d / "pins.txt")),
    "task rows": ("piqa.jsonl", lambda d: read_rows([d / "piqa.jsonl"], "json")),
    "holdout data": ("holdout.txt", lambda d: holdout_bytes(d / "holdout.txt")),
}
KINDS = {"a FIFO": _fifo, "a device": _dev_zero, "2,147,483,649 bytes": _sparse}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", READERS)
def test_every_reader_refuses_a_fifo_a_device_and_a_sparse_giant_at_once(
    tmp_path: Path, reader: str, kind: str
) -> None:
    name, read = READERS[reader]
    KINDS[kind](tmp_path / name)
    with pytest.raises((InputError, TaskDataError, TaskPinsError)) as refused:
        read(tmp_path)
    said = str(refused.value)
    assert str(tmp_path / name) in said and kind in said, said


def test_a_declaration_nested_5000_deep_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.recorder]\nfactory = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ZeroShotInputError, match="pyproject.toml: not a readable TOML file .nested deeper"):
        read_declaration(tmp_path)


def test_a_declaration_of_too_many_values_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.recorder]\nfactory = [" + "1," * 30_000 + "]\n")
    with pytest.raises(ZeroShotInputError, match="pyproject.toml: more than 20,000 values"):
        read_declaration(tmp_path)


def test_scalars_of_200000_brackets_are_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "tensorboard_scalars.json").write_text("[" * 200_000)
    with pytest.raises(InputError, match="tensorboard_scalars.json: not a readable scalars file"):
        logged_loss(tmp_path, 10)


def test_a_15_mib_all_config_yaml_is_refused_by_its_nodes(tmp_path: Path) -> None:
    text = "model: [" + "[1, 2], " * (15 * 2**20 // 8) + "]\n"
    (tmp_path / "all_config.yaml").write_text(text)
    with pytest.raises(ZeroShotInputError, match=r"all_config.yaml: line 1: YAML of more than 20,000 nodes"):
        read_team_config(tmp_path, model_code=None)


def test_honest_files_are_read(tmp_path: Path) -> None:
    (tmp_path / "all_config.yaml").write_text("model: {d_model: 8}\ndata: {val_path: holdout.txt}\n")
    (tmp_path / "pyproject.toml").write_text('[tool.recorder]\nfactory = "pkg.mod:build"\n')
    (tmp_path / "tensorboard_scalars.json").write_text(json.dumps({"eval/loss": [{"step": 10, "value": 3.5}]}))
    assert read_team_config(tmp_path, model_code=None).model() == {"d_model": 8}
    assert read_declaration(tmp_path).factory == "pkg.mod:build"
    assert logged_loss(tmp_path, 10).value == 3.5
