"""docs/cli.md's `--set` table is generated from the config's fields: it cannot drift from the code."""

from __future__ import annotations

import shutil

import pytest

from recorder.cli.shared.settings import MEANINGS, _default, setting_fields, settings_markdown
from tests.helpers import REPO, on_terminal, run_cli


def test_every_setting_has_a_meaning_and_none_is_left_over() -> None:
    keys = [key for key, _, _ in setting_fields()]
    assert sorted(keys) == sorted(MEANINGS)


def test_the_readme_shows_the_generated_table() -> None:
    assert settings_markdown() in (REPO / "docs" / "cli.md").read_text()


@pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux `script`")
def test_on_a_terminal_80_columns_wide_the_settings_are_a_table_that_fits() -> None:
    text = on_terminal(80, "train", "--list-settings")
    lines = text.splitlines()
    assert lines[0].split() == ["--set", "key", "=", "default", "type", "meaning"], text
    assert max(len(line) for line in lines) <= 80, text
    words = text.split()
    for key, _, default in setting_fields():  # each key whole at the start of a row, its default under it
        row = next(i for i, line in enumerate(lines) if line.split()[:1] == [key])
        assert lines[row + 1].split()[:2] == ["=", _default(default)], (key, text)
        assert set(MEANINGS[key].split()) <= set(words), (key, text)  # every word of the meaning whole
    assert "left out" not in text, text


def test_through_a_pipe_each_setting_is_one_line() -> None:
    done = run_cli("train", "--list-settings")
    assert done.returncode == 0 and done.stdout == settings_markdown(), done.stderr
    assert len(done.stdout.splitlines()) == len(setting_fields()) + 2  # the header, its rule, a line each
