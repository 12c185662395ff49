"""What a task's data is, known by its content: the rows of the split lm-eval reads, hashed whatever file
holds them, and the content each task is known to have, per lm-eval task version.

A split's content hash is the sha256 of its rows in order, one canonical JSON object per line (keys sorted,
no spaces, UTF-8): the same for a JSON-lines export and the Arrow files of a Hugging Face datasets copy of
the same rows, and different as soon as one answer changes. A result is shown as a task's score only when
its data's content is that task's official split, pinned below (or in the file RECORDER_TASK_PINS names);
the small records this project ships for its tests (tasks/data/) are known as test data, never as the task.

The official splits' hashes are not pinned here: no hub is reachable where this project is built, and a hash
copied from elsewhere unchecked would be a guess. Pin them from a copy you trust: each results.json records
every task's `version` and `content_sha256`; a line `TASK VERSION SHA256` per task in the file
RECORDER_TASK_PINS names makes that content the task's."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

PINS_ENV: Final = "RECORDER_TASK_PINS"
PINS_LIMIT: Final = 1024 * 1024  # a line of about 80 bytes per task and version

Known = Literal["official", "test data", "not the task"]

# (lm-eval task name, task version) -> content sha256 of the official split scored (none pinned yet: above)
OFFICIAL: Final[Mapping[tuple[str, str], frozenset[str]]] = {}

# The records shipped in evaluator/harness/tasks/data/ for the tests (python -m tests.kit.write_data): real
# tasks' layouts, invented questions. Their content, per task and version (siqa is social_iqa's file).
TEST_DATA: Final[Mapping[tuple[str, str], str]] = {
    ("arc_easy", "1.0"): "86d4dcf1d8fcf341a882addc0bfd9eb16887405b05834a3fdbba01adc888815b",
    ("arc_challenge", "1.0"): "a5de209181dd9de6947b7afc4a424cbef1150044b3e757988ae5257b76390ce1",
    ("hellaswag", "1.0"): "e18881b65f37be234f5f3d4fc757469ba929641354099d27ca5e9f72f2877f0e",
    ("openbookqa", "1.0"): "35bd23ea34b906990879cd1ffd76b9c8fa7ae5e0d426b93ff20f402f0a0cf742",
    ("piqa", "1.0"): "aad3ce9fa242e28cb85a6b0c688aadd5adecba1b5e4298ad500bbc1d35c7435c",
    ("winogrande", "1.0"): "10bc65a4dd6764acb539afa902f9859d652f1020f968465f7a6341d74caedab9",
    ("siqa", "0.0"): "fc6f4e249f810daa4b52c465dd84c38763b12db034305593d50d8c5efe90cc88",
    ("social_iqa", "0.0"): "fc6f4e249f810daa4b52c465dd84c38763b12db034305593d50d8c5efe90cc88",
    ("easy_qa", "1.0"): "67c0c6db0eb4bc9f0cc221705fc50a8a18fc50db3d5b1e81189abd876c2cdede",
}


def content_sha256(files: list[Path], builder: str) -> str:
    """The content hash of a split held in `files` (JSON lines, or `builder` "arrow": a datasets split's
    Arrow files in order), as evaluator.harness.task_rows reads them."""
    from evaluator.harness.task_rows import read_rows

    return read_rows(files, builder).content_sha256


@dataclass(frozen=True, slots=True)
class Judged:
    """What a task's data was: the official split, the project's test data, or not the task (why)."""

    known: Known
    why: str = ""


def judge(task: str, version: object, content: object, pins: Mapping[tuple[str, str], frozenset[str]]) -> Judged:
    """Whether `content` (a result's recorded content hash) is `task`'s at lm-eval `version`."""
    key = (task, _version(version))
    if not isinstance(content, str) or not content:
        return Judged("not the task", "its data's content hash is not recorded")
    if content in OFFICIAL.get(key, frozenset()) | pins.get(key, frozenset()):
        return Judged("official")
    if TEST_DATA.get(key) == content:
        return Judged("test data")
    pinned = "is not its pinned official split" if key in OFFICIAL or key in pins else "matches no pinned split"
    return Judged("not the task", f"its data (content {content[:12]}) {pinned} of lm-eval {key[0]} {key[1]}")


def _version(version: object) -> str:
    return str(version) if version is not None else "?"


def pins_from_environment() -> dict[tuple[str, str], frozenset[str]]:
    """The pins in the file RECORDER_TASK_PINS names (`TASK VERSION SHA256` lines, `#` comments), if set."""
    name = os.environ.get(PINS_ENV)
    return read_pins(Path(name)) if name else {}


def read_pins(path: Path) -> dict[tuple[str, str], frozenset[str]]:
    from evaluator.harness.errors import TaskPinsError
    from recorder.untrusted.untrusted_files import IrregularFileError, read_bounded

    try:  # bounded: a FIFO is refused at once, /dev/zero by what it is, a giant by its size
        text = read_bounded(path, PINS_LIMIT, "task pins", follow=True).decode("utf-8")
    except IrregularFileError as e:
        raise TaskPinsError(f"{e} ({PINS_ENV} names it)") from None
    except UnicodeDecodeError as e:
        raise TaskPinsError(f"{path} ({PINS_ENV}): cannot read it ({e})") from None
    pins: dict[tuple[str, str], set[str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 3 or len(fields[2]) != 64 or any(c not in "0123456789abcdef" for c in fields[2]):
            raise TaskPinsError(f"{path}:{n} ({PINS_ENV}): not `TASK VERSION SHA256` (64 hex digits): {line!r}")
        pins.setdefault((fields[0], fields[1]), set()).add(fields[2])
    return {k: frozenset(v) for k, v in pins.items()}
