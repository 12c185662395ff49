"""The repository speaks of what the product does, never of how it was built: no file names an issue, an
acceptance point, a work session or a review round of its own development. Every tracked (or new, not
ignored) text file is read; upstream projects' own issues and pull requests are facts about the world and
stay. The README is the front page: at most 300 lines, the rest lives in docs/."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(REPO).as_posix()
README_MAX_LINES = 300

# Each pattern names the history of the project's own development. The product's own words (a writer
# session, an evaluator session, "a later session scores only what is missing") match none of them.
HISTORY = [
    re.compile(r"\bissues?\s*#?\d+", re.I),  # "issue 17", "issue #8", "issues 14"
    re.compile(r"(?<![a-z])(?:the|this|that)[ _]issue(?![a-z])|\bissue's\b", re.I),  # in prose or a name
    re.compile(r"\bacceptance\b", re.I),  # "acceptance 3", "the acceptance"
    re.compile(r"\bfindings?\s+\d+", re.I),  # "finding 13 of ..."
    re.compile(r"\bsessions?\s+\d+\b", re.I),  # "session 8", "sessions 6 and 7"
    re.compile(r"\b(?:previous|last) (?:session|round)'s\b", re.I),
    re.compile(r"\bthis session's (?:machine|changes|code|work|loose ends)\b", re.I),
    re.compile(r"\b(?:previous|last) session\b|\b(?:this|last|previous|next) round\b|\bround of\b", re.I),
    re.compile(r"\bthe lead\b|\blead's\b", re.I),
    re.compile(r"\bPR\s*#?\d+"),  # a pull request of ours; upstream ones are ALLOWED below
]
# Facts about other projects, quoted where the product depends on them.
ALLOWED = ("training_policies PR #596",)


def findings(text: str) -> list[str]:
    """Every phrase in `text` that speaks of the project's own development, with its line number."""
    for phrase in ALLOWED:
        text = text.replace(phrase, "")
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        found += [f"line {number}: {m.group(0)!r}" for p in HISTORY for m in p.finditer(line)]
    return found


def repository_texts() -> list[tuple[str, str]]:
    """(path, text) of every tracked or new, not ignored, file that reads as UTF-8 text, this one excepted."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.decode(errors='replace').strip()}")
    texts = []
    for name in sorted(set(listed.stdout.decode().split("\0")) - {"", THIS}):
        path = REPO / name
        if not path.is_file():
            continue  # deleted in the work tree, or a submodule
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary: pictures, wheels
        try:
            texts.append((name, data.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return texts


def test_no_file_speaks_of_the_projects_own_development() -> None:
    texts = repository_texts()
    assert any(name == "README.md" for name, _ in texts)  # the walk found the repository
    hits = [f"{name} {hit}" for name, text in texts for hit in findings(text)]
    assert not hits, "say what the product does instead:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    "text",
    [
        "Replay streams (issue 19): a run is folded once.",
        "Targets (issue #8): ours >= 2x TRL's step speed.",
        '"""Issue 14, acceptance 1: every command exits 2."""',
        "Measured in session 8 on this session's machine.",
        "Findings 1-6 of the review, fixed this round.",
        "The lead's rerun on a quiet machine.",
        "Fixed in PR #12.",
        "def test_the_json_the_issue_names():",
    ],
)
def test_the_check_catches_each_kind_of_phrase(text: str) -> None:
    assert findings(text)


@pytest.mark.parametrize(
    "text",
    [
        "One segment per writer session; a killed evaluator session is closed by the next one.",
        "Evaluate at most N checkpoints in this session.",
        "Record that an earlier session's evaluation of a step ended without a result.",
        "A later session scores only the tasks not yet scored for a step.",
        "MLPerf Training v6.1 changed how the benchmark is timed (training_policies PR #596).",
        "Measured on 2026-12-02 on a 2-core machine: 16.7 min.",
    ],
)
def test_the_products_own_words_pass(text: str) -> None:
    assert findings(text) == []


# Where a command the README shows writes: `-o FILE` and `--root DIR` (a run below it).
WRITES = re.compile(r"(?:^|\s)(?:-o|--output)\s+([\w./-]+)|--root\s+([\w./-]+)")


def readme_outputs(text: str) -> list[str]:
    """Paths, relative to the clone, that the README's `recorder` commands write."""
    lines = [line.removeprefix("$ ").split("#", 1)[0] for line in text.splitlines()]
    quoted = re.findall(r"`(recorder [^`]+)`", text)  # a command in prose
    found = []
    for command in [line for line in lines if line.startswith("recorder ")] + quoted:
        for file, root in WRITES.findall(command):
            found.append(file or f"{root}/demo/events/trainer-0001.arrows")
    return found


def test_readme_outputs_finds_files_and_runs() -> None:
    assert readme_outputs(
        "$ recorder report runs/demo -o demo.html\nrecorder eval x --root ref  # -o not.this\nsee `recorder plot r -o p.png`"
    ) == [
        "demo.html",
        "ref/demo/events/trainer-0001.arrows",
        "p.png",
    ]


def test_what_the_readme_tells_a_user_to_write_is_ignored() -> None:
    """Following the README in a clone leaves the tests (this file's walk included) and `git status` clean."""
    outputs = readme_outputs((REPO / "README.md").read_text(encoding="utf-8"))
    assert "demo.html" in outputs and any(o.startswith("runs/") for o in outputs)
    checked = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin", "-z"],
        cwd=REPO,
        input="\0".join(outputs).encode(),
        capture_output=True,
        check=False,
    )
    if checked.returncode not in (0, 1):
        pytest.skip(f"not a git checkout: {checked.stderr.decode(errors='replace').strip()}")
    ignored = set(checked.stdout.decode().split("\0"))
    assert [o for o in outputs if o not in ignored] == [], "add these to .gitignore"


def readme_excess(text: str) -> int:
    """How many lines `text` has over the README's limit (0 when it fits)."""
    return max(0, len(text.splitlines()) - README_MAX_LINES)


def test_the_readme_is_a_front_page() -> None:
    excess = readme_excess((REPO / "README.md").read_text(encoding="utf-8"))
    assert excess == 0, f"README.md is {excess} line(s) over {README_MAX_LINES}: move the reference part to docs/"


def test_the_readme_check_counts_lines() -> None:
    assert readme_excess("line\n" * README_MAX_LINES) == 0
    assert readme_excess("line\n" * (README_MAX_LINES + 7)) == 7
