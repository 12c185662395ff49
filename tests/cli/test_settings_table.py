"""docs/cli.md's `--set` table is generated from the config's fields: it cannot drift from the code."""

from __future__ import annotations

from recorder.cli._settings import MEANINGS, setting_fields, settings_markdown
from tests.helpers import REPO


def test_every_setting_has_a_meaning_and_none_is_left_over() -> None:
    keys = [key for key, _, _ in setting_fields()]
    assert sorted(keys) == sorted(MEANINGS)


def test_the_readme_shows_the_generated_table() -> None:
    assert settings_markdown() in (REPO / "docs" / "cli.md").read_text()
