"""`eval` and `zero-shot` list their options under one shared set of help sections (`recorder.cli.terminal.panels`):
every option of either names one, and an option both commands take is under the same heading in each. An
option both take is declared once, in a module of shared option types (recorder.cli.evaluation.eval_options,
_model_source, _signing), unless it means another thing in each (below, with why)."""

from __future__ import annotations

import typing
from typing import Any

import typer.main
from typer.models import OptionInfo

from recorder.cli import app
from recorder.cli.evaluation import eval_options as _eval_options
from recorder.cli.evaluation.evaluate import eval_command
from recorder.cli.evaluation.zero_shot import zero_shot_command
from recorder.cli.shared import model_source as _model_source
from recorder.cli.shared import signing_keys as _signing
from recorder.cli.terminal import panels as _panels

PANELS = {v for k, v in vars(_panels).items() if k.isupper()}
# the one name the two commands use for different things, each as its users know it
DIFFERENT_MEANINGS = {
    "--limit": "eval: checkpoints per session; zero-shot: examples per task, as lm-eval's --limit",
    "--batch-size": "eval: samples generated at once; zero-shot: requests scored in one forward pass",
    "--workers": "eval: in process unless more than 1; zero-shot: Ray actors always, by default one per PATH",
    "--dtype": "eval: the rollout's dtype unless given (fp16 too); zero-shot: fp32 unless given",
}
SHARED_MODULES = (_eval_options, _model_source, _signing)


def _declared(module: Any) -> list[OptionInfo]:
    """The option declarations a module of shared option types holds (the metadata of its Annotated types)."""
    found = []
    for value in vars(module).values():
        found += [m for m in getattr(value, "__metadata__", ()) if isinstance(m, OptionInfo)]
    return found


def _declarations(command: Any) -> dict[str, OptionInfo]:
    """Each option parameter of a command function with the OptionInfo its type declares."""
    hints = typing.get_type_hints(command, include_extras=True)
    return {
        name: next(m for m in hint.__metadata__ if isinstance(m, OptionInfo))
        for name, hint in hints.items()
        if any(isinstance(m, OptionInfo) for m in getattr(hint, "__metadata__", ()))
    }


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


def test_an_option_both_commands_take_is_declared_once() -> None:
    shared = [id(info) for module in SHARED_MODULES for info in _declared(module)]
    ev, zs = _declarations(eval_command), _declarations(zero_shot_command)
    flags = {name: f"--{name.replace('_', '-')}" for name in ev.keys() & zs.keys()}
    assert flags and set(flags.values()) == (_options("eval").keys() & _options("zero-shot").keys())
    for name, flag in flags.items():
        if flag in DIFFERENT_MEANINGS:
            assert ev[name].help != zs[name].help, flag  # said differently, as they differ
            continue
        assert id(ev[name]) in shared and id(zs[name]) in shared, flag
        assert (ev[name].help, ev[name].rich_help_panel) == (zs[name].help, zs[name].rich_help_panel), flag


def test_help_lists_each_section_under_its_heading() -> None:
    from tests.helpers import run_cli

    shown = run_cli("eval", "--help")
    assert shown.returncode == 0, shown.stderr
    headings = [line[:-1] for line in shown.stdout.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert set(_options_panels("eval")) <= set(headings), headings


def _options_panels(name: str) -> list[str]:
    return sorted({p for p in _options(name).values() if p})
