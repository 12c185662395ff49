"""`eval` and `zero-shot` list their options under one shared set of help sections (`recorder.cli._panels`):
every option of either names one, and an option both commands take is under the same heading in each."""

from __future__ import annotations

import typer.main

from recorder.cli import _panels, app

PANELS = {v for k, v in vars(_panels).items() if k.isupper()}
# the one name the two commands use for different things, each as its users know it
DIFFERENT_MEANINGS = {"--limit": "eval: checkpoints per session; zero-shot: examples per task, as lm-eval's --limit"}


def _options(name: str) -> dict[str, str | None]:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {
        p.opts[0]: getattr(p, "rich_help_panel", None)
        for p in command.params
        if p.param_type_name == "option" and p.opts[0] != "--help"
    }


def test_every_option_of_eval_and_zero_shot_is_in_a_shared_section() -> None:
    for name in ("eval", "zero-shot"):
        outside = {o: panel for o, panel in _options(name).items() if panel not in PANELS}
        assert not outside, (name, outside)


def test_an_option_both_commands_take_is_under_the_same_heading() -> None:
    ev, zs = _options("eval"), _options("zero-shot")
    differ = {o: (ev[o], zs[o]) for o in ev.keys() & zs.keys() - DIFFERENT_MEANINGS.keys() if ev[o] != zs[o]}
    assert not differ, differ


def test_help_lists_each_section_under_its_heading() -> None:
    from tests.helpers import run_cli

    shown = run_cli("eval", "--help")
    assert shown.returncode == 0, shown.stderr
    headings = [line[:-1] for line in shown.stdout.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert set(_options_panels("eval")) <= set(headings), headings


def _options_panels(name: str) -> list[str]:
    return sorted({p for p in _options(name).values() if p})
