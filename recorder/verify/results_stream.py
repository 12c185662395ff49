"""A results.json read within a memory bound: its top-level fields whole (as the claims they make, see
recorder.results.claims), its `samples` one at a time.

`json.loads` of a results.json builds every sample as a dict: about twenty-five times the file's size in
memory (a 100 MB file took 2.6 GB). The evidence rule needs the top-level fields and, of the samples, only
a tally: which (task, sample) pairs, how many per task, which tasks have a correct sample. So the file is
decoded a chunk at a time, each value with `json.JSONDecoder.raw_decode`, and each sample folded into a
`SampleTally` and dropped. Memory: a chunk, one value (at most VALUE_LIMIT), and the tally (at most
MAX_SAMPLES pairs), whatever the file's size.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any

from recorder.results.claims import SAMPLES, EvaluationClaims

CHUNK = 1 << 20
VALUE_LIMIT = 16 << 20  # a top-level field or one sample; the evaluator's are a few hundred bytes
MAX_SAMPLES = 2_000_000  # tasks x samples per task; the benchmark's are a few thousand
_WHITESPACE = " \t\n\r"


class ResultsFormatError(ValueError):
    """A results.json that is not JSON, or larger in one of its parts than verify reads."""


@dataclass
class SampleTally:
    """What the evidence rule checks of the samples, folded one sample at a time."""

    count: int = 0
    bad_index: bool = False  # a sample without integer task and sample indices
    twice: tuple[int, int] | None = None  # the first (task, sample) listed twice
    per_task: Counter[int] = field(default_factory=Counter)
    solved: set[int] = field(default_factory=set)  # tasks with a sample whose `correct` is true
    _seen: set[object] = field(default_factory=set)

    def add(self, sample: object) -> None:
        self.count += 1
        if self.count > MAX_SAMPLES:
            raise ResultsFormatError(f"lists more than {MAX_SAMPLES:,} samples, more than verify reads")
        task = sample.get("task") if isinstance(sample, dict) else None
        index = sample.get("sample") if isinstance(sample, dict) else None
        if not _index(task) or not _index(index):
            self.bad_index = True
            return
        assert isinstance(task, int) and isinstance(index, int) and isinstance(sample, dict)
        key: object = (task << 64) | index if index < 1 << 64 else (task, index)  # an int is smaller than a pair
        if key in self._seen and self.twice is None:
            self.twice = (task, index)
        self._seen.add(key)
        self.per_task[task] += 1
        if sample.get("correct") is True:
            self.solved.add(task)


def _index(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


class _Reader:
    """Text of a binary file, decoded a chunk at a time; `pos` indexes `buf`, which keeps only what is unread."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f, self.buf, self.pos, self.eof = f, "", 0, False
        self.decoder = json.JSONDecoder()
        import codecs

        self.utf8 = codecs.getincrementaldecoder("utf-8")()

    def fill(self) -> None:
        chunk = self.f.read(CHUNK)
        self.buf = self.buf[self.pos :] + self.utf8.decode(chunk, final=not chunk)
        self.pos = 0
        self.eof = not chunk

    def peek(self) -> str:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buf) or self.eof:
                return self.buf[self.pos] if self.pos < len(self.buf) else ""
            self.fill()

    def take(self, expected: str) -> str:
        c = self.peek()
        if c not in expected or not c:
            raise ResultsFormatError(f"is not JSON (expected one of {expected!r} at character {self.pos})")
        self.pos += 1
        return c

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                if self.eof:
                    raise ResultsFormatError(f"is not JSON ({e})") from e
            except RecursionError as e:
                raise ResultsFormatError("is not JSON (nested deeper than Python parses)") from e
            else:
                if end < len(self.buf) or self.eof:  # a number cut by the chunk's end would read short
                    self.pos = end
                    return obj
            if len(self.buf) - self.pos > VALUE_LIMIT:
                raise ResultsFormatError(f"holds a value larger than {VALUE_LIMIT:,} bytes, more than verify reads")
            self.fill()


def read_results(f: IO[bytes]) -> tuple[EvaluationClaims, SampleTally | None]:
    """The claims of the document's top-level fields but its samples (none when the file holds something
    else than an object), and the samples' tally when they are a non-empty list. ResultsFormatError for what
    is not JSON or is too large to read."""
    r = _Reader(f)
    if r.peek() != "{":
        r.value()
        if r.peek():
            raise ResultsFormatError("is not JSON (extra data after the document)")
        return EvaluationClaims.of(None), None
    r.take("{")
    doc: dict[str, Any] = {}
    tally: SampleTally | None = None
    if r.peek() == "}":
        r.take("}")
    else:
        while True:
            key = r.value()
            if not isinstance(key, str):
                raise ResultsFormatError("is not JSON (an object key that is not a string)")
            r.take(":")
            if key == SAMPLES and r.peek() == "[":
                tally = _samples(r)
                doc.pop(key, None)
            else:
                doc[key] = r.value()
                tally = None if key == SAMPLES else tally
            if r.take(",}") == "}":
                break
    if r.peek():
        raise ResultsFormatError("is not JSON (extra data after the document)")
    return EvaluationClaims.of(doc), tally if tally is not None and tally.count else None


def _samples(r: _Reader) -> SampleTally:
    tally = SampleTally()
    r.take("[")
    if r.peek() == "]":
        r.take("]")
        return tally
    while True:
        tally.add(r.value())
        if r.take(",]") == "]":
            return tally
