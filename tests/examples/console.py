"""The console examples of the README and docs/, read as a cram file is read, and checked against what the
commands print.

A console example is a fenced block whose first line starts with `$ `: each `$ COMMAND` is run by bash in the
example's own directory, and the lines under it, up to the next `$`, are what it must print (stdout and stderr
together, as a terminal shows them). A command that goes on over several lines (an open quote) is read
until its quotes close.

An HTML comment right above a block says how to run it (invisible where the Markdown is rendered):

    <!-- console: before: SHELL -->     hidden setup run first in the example's directory (repeatable);
                                        it must exit 0, and what it prints is not compared
    <!-- console: continues -->         the block runs on in the directory of the block before it in the file
    <!-- console: python above -->      the nearest ```python block above runs (as `python snippet.py`), after
                                        the `before:` setups
    <!-- console: slow -->              the example runs in the slow tier (training, minutes)
    <!-- console: exact -->             what the example prints is deterministic: its numbers are compared as
                                        written, never masked (a digest still is: a run id hashes a path)
    <!-- console: needs WHAT: WHY -->   not run here (a GPU, vLLM's own environment); listed by the test

Volatile parts are masked on both sides before comparing, as a cram user would with `(re)`: every run of
digits (times, counts, scores, dates, sizes) except an exit status (`exit 2`) and except in an `exact` example, hexadecimal digests of eight
characters or more, the example's own directory, runs of spaces and of a table's rule characters, blank
lines, and train's heartbeat lines (`train: still starting (10 s)`: as many as start-up took tens of seconds). In the expected text, a line `...` stands for any number of lines and `...` inside a line for any text.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

DIRECTIVE = re.compile(r"<!--\s*console:\s*(.*?)\s*-->")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
HEX = re.compile(r"\b[0-9a-f]{8,}\b")
# In an exact example a digest is told from a number's digits by a letter in it, or by being a run id's
# 8-character suffix (`result_0-bee3918c`): 10.150568750000001's decimals are compared, not masked.
EXACT_HEX = re.compile(r"(?<=-)[0-9a-f]{8}\b|\b(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b")
DIGITS = re.compile(r"(?<!exit )(?<![0-9])[0-9]+")
# train's heartbeat while it starts, one line every 10 s: how many there are is how long start-up took
HEARTBEAT = re.compile(r"^train: [^()]* \(# s\)$")
RULES = re.compile(r"([─━═│┃┏┓┗┛┡┩└┘┌┐├┤┬┴┼╇╋┳┻])\1+")


@dataclass
class Command:
    """One `$ COMMAND` of an example and the lines the doc shows under it."""

    line: int  # where the command is in its file (1-based)
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Example:
    """One fenced console block of a doc, with the directives above it."""

    path: Path
    line: int  # the block's opening fence (1-based)
    commands: list[Command]
    before: list[str] = field(default_factory=list)
    continues: bool = False
    python: str | None = None  # the code of the ```python block above, when a directive asks to run it
    slow: bool = False
    exact: bool = False  # numbers and digests compared as written
    needs: str | None = None

    @property
    def name(self) -> str:
        return f"{self.path.name}:{self.line}"


def _directives(lines: list[str], fence: int) -> list[str]:
    """The `console:` comments on the lines right above the fence at index `fence` (blank lines between
    them and the fence allowed)."""
    found: list[str] = []
    i = fence - 1
    while i >= 0 and (not lines[i].strip() or DIRECTIVE.fullmatch(lines[i].strip())):
        match = DIRECTIVE.fullmatch(lines[i].strip())
        if match:
            found.insert(0, match.group(1))
        i -= 1
    return found


def _commands(body: list[str], first_line: int) -> list[Command]:
    commands: list[Command] = []
    i = 0
    while i < len(body):
        if body[i].startswith("$ "):
            start = i
            text = body[i][2:]
            while not _closed(text) and i + 1 < len(body):
                i += 1
                text += "\n" + body[i]
            commands.append(Command(line=first_line + start, text=text))
        elif commands:
            commands[-1].expected.append(body[i])
        i += 1
    return commands


def _closed(text: str) -> bool:
    try:
        shlex.split(text, comments=True)
    except ValueError:  # an open quote: the command goes on on the next line
        return False
    return True


def examples_in(path: Path) -> list[Example]:
    """Every console example of one Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    python: str | None = None
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        body = lines[i + 1 : end]
        if lines[i].strip() == "```python":
            python = "\n".join(body) + "\n"
        elif body and body[0].startswith("$ "):
            example = Example(path=path, line=i + 1, commands=_commands(body, i + 2))
            for directive in _directives(lines, i):
                _apply(example, directive)
                if directive == "python above":
                    example.python = python
            found.append(example)
        i = end + 1
    return found


def _apply(example: Example, directive: str) -> None:
    word, _, rest = directive.partition(":")
    if directive == "python above":
        return  # filled in by the caller, which knows the blocks above
    if directive == "continues":
        example.continues = True
    elif directive == "slow":
        example.slow = True
    elif directive == "exact":
        example.exact = True
    elif word == "before":
        example.before.append(rest.strip())
    elif word.startswith("needs "):
        example.needs = directive[len("needs ") :]
    else:
        raise ValueError(f"{example.name}: unknown console directive {directive!r}")


def sessions(examples: list[Example]) -> list[list[Example]]:
    """The examples grouped as they run: a block that `continues` joins the session of the one before."""
    grouped: list[list[Example]] = []
    for example in examples:
        if example.continues and grouped:
            grouped[-1].append(example)
        else:
            grouped.append([example])
    return grouped


def normalize(text: str, workdir: Path, *, exact: bool = False) -> list[str]:
    """The lines of `text` with the volatile parts masked (the module's docstring says which); `exact`: numbers
    kept as they are."""
    text = ANSI.sub("", text).replace(f"{workdir}/", "").replace(str(workdir), ".")
    out: list[str] = []
    for line in text.splitlines():
        line = EXACT_HEX.sub("<hex>", line) if exact else DIGITS.sub("#", HEX.sub("<hex>", line))
        line = RULES.sub(r"\1", line)
        line = " ".join(line.split())
        if line and not HEARTBEAT.match(line):
            out.append(line)
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether the masked `actual` lines are what the masked `expected` lines show (with `...` wildcards)."""
    pattern = ""
    for line in expected:
        if line == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += ".*".join(re.escape(part) for part in line.split("...")) + r"\n"
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in actual)) is not None
