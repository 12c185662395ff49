"""Every console example of the README and docs/ runs, and prints what the text shows (tests/examples/console.py
says how a block is read and what is masked). Each session (a block and the blocks that continue it) runs in a
fresh directory laid out like a clone's root: `../shared` beside it, and the repository's `trainer/`,
`evaluator/` and `tests/` in it, so that the docs' relative paths and `python -m tests.kit...` work."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO
from tests.examples.console import Example, examples_in, matches, normalize, sessions

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARKER = "@@console-command@@"


def _sessions() -> list[list[Example]]:
    return [s for path in DOCS for s in sessions(examples_in(path))]


def _param(session: list[Example]) -> object:
    marks: list[pytest.MarkDecorator] = []
    if any(e.slow for e in session):
        marks.append(pytest.mark.slow)
    needs = [e.needs for e in session if e.needs]
    if needs:
        marks.append(pytest.mark.skip(reason=f"needs {needs[0]}"))
    return pytest.param(session, id=session[0].name, marks=marks)


def _script(session: list[Example], work: Path) -> str:
    """One bash script for the session, each command preceded by a marker line, so that exports and `cd`
    carry over as in a terminal; the hidden setup (`before:`, then a Python block above) must succeed."""
    log = work.parent / "setup.log"  # what a setup prints is shown only when it fails
    lines = ["exec 2>&1"]
    for n, example in enumerate(session):
        if example.python is not None:
            (work / f"snippet{n}.py").write_text(example.python)
            example = replace(example, before=[*example.before, f"python snippet{n}.py"])
        for setup in example.before:
            lines.append(
                f"( {setup} ) >'{log}' 2>&1 || {{ cat '{log}'; echo 'setup failed: {example.name}'; exit 97; }}"
            )
        for command in example.commands:
            lines.append(f"echo '{MARKER}'")
            lines.append(command.text)
    return "\n".join(lines) + "\n"


def _workdir(tmp_path: Path) -> Path:
    work = tmp_path / "clone"
    work.mkdir()
    if CORPUS.is_dir():
        (tmp_path / "shared").symlink_to(CORPUS.parent, target_is_directory=True)
    for name in ("trainer", "evaluator", "tests"):
        (work / name).symlink_to(REPO / name, target_is_directory=True)
    return work


@pytest.mark.parametrize("session", [_param(s) for s in _sessions()])
def test_the_example_prints_what_the_doc_shows(session: list[Example], tmp_path: Path) -> None:
    if any("../shared" in c.text for e in session for c in e.commands) and not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    work = _workdir(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("RECORDER_ROOT", None)
    done = subprocess.run(
        ["bash", "-c", _script(session, work)], cwd=work, env=env, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode != 97, done.stdout
    outputs = done.stdout.split(f"{MARKER}\n")[1:]
    commands = [(e.exact, c) for e in session for c in e.commands]
    assert len(outputs) == len(commands), done.stdout
    wrong = []
    for (exact, command), output in zip(commands, outputs, strict=True):
        want = normalize("\n".join(command.expected), work, exact=exact)
        got = normalize(output, work, exact=exact)
        if not matches(want, got):
            wrong.append(
                f"{command.line}: $ {command.text}\n--- the doc shows\n"
                + "\n".join(command.expected)
                + "\n--- it printed\n"
                + output
            )
    assert not wrong, f"{session[0].path.name}: " + "\n\n".join(wrong)


def test_the_reader_finds_every_console_block() -> None:
    """No block is lost to the reader: every fenced block starting with `$ ` is an example."""
    blocks = 0
    for path in DOCS:
        lines = path.read_text().splitlines()
        blocks += sum(
            1
            for above, line in zip(lines, lines[1:], strict=False)
            if above.startswith("```") and line.startswith("$ ")
        )
    assert blocks == sum(len(examples_in(p)) for p in DOCS) and blocks > 30


def test_an_exact_example_compares_its_numbers() -> None:
    """A stale number in an `exact` block fails; elsewhere digits are masked, and digests are everywhere."""
    doc, printed, work = '"olympic_minutes": 10.150617046110568', '"olympic_minutes": 10.150568750000001', Path("/w")
    assert not matches(normalize(doc, work, exact=True), normalize(printed, work, exact=True))
    assert matches(normalize(doc, work), normalize(printed, work))
    ids = ("sub/result_0-bee3918c", "sub/result_0-0a1b2c3d")
    assert matches(normalize(ids[0], work, exact=True), normalize(ids[1], work, exact=True))
